import { Controller, Get, Inject } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../access/route-access.decorators';
import { ConfigOf } from '../config/config-namespace';
import { publicConfig } from '../config/namespaces';
import { allPermissions } from '../roles/permissions';

interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported: string[];
  bearer_methods_supported: string[];
}

/**
 * RFC 9728 metadata of the resources OAuth tokens are issued for: the MCP server, the A2A agents and the
 * REST API.
 * Public: a client reads it before it holds any credential, from the 401's `resource_metadata`.
 */
@ApiExcludeController()
@Controller('.well-known/oauth-protected-resource')
export class ProtectedResourceController {
  constructor(@Inject(publicConfig.KEY) private readonly publicUrl: ConfigOf<typeof publicConfig>) {}

  @Get('mcp')
  @Public()
  mcp(): ProtectedResourceMetadata {
    return this.metadataOf('/mcp');
  }

  @Get('a2a')
  @Public()
  a2a(): ProtectedResourceMetadata {
    return this.metadataOf('/a2a');
  }

  @Get('v1')
  @Public()
  restApi(): ProtectedResourceMetadata {
    return this.metadataOf('/v1');
  }

  private metadataOf(path: string): ProtectedResourceMetadata {
    return {
      resource: `${this.publicUrl.url}${path}`,
      authorization_servers: [this.publicUrl.url],
      scopes_supported: [...allPermissions()],
      bearer_methods_supported: ['header'],
    };
  }
}
