import { Catch, Inject } from '@nestjs/common';
import { ConfigOf } from '../config/config-namespace';
import { oauthConfig, publicConfig } from '../config/namespaces';
import { BearerChallengeFilter } from '../http/bearer-challenge.filter';
import { mcpRequestPermissions } from './mcp-tools';

/** Where a client of /mcp learns which authorization server to ask (RFC 9728). */
export const MCP_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource/mcp';

/** The key check's refusals on /mcp, with the challenge MCP's authorization spec asks for. */
@Catch()
export class McpChallengeFilter extends BearerChallengeFilter {
  constructor(
    @Inject(publicConfig.KEY) publicUrl: ConfigOf<typeof publicConfig>,
    @Inject(oauthConfig.KEY) oauth: ConfigOf<typeof oauthConfig>,
  ) {
    super(publicUrl.url, MCP_RESOURCE_METADATA_PATH, oauth.defaultScopes, (request) =>
      mcpRequestPermissions(request.body),
    );
  }
}
