import { ArgumentsHost, Catch, Inject } from '@nestjs/common';
import type { Request } from 'express';
import { AccessDenialCode } from '../access/access-denial';
import { ProblemException } from '../common/problem';
import { ConfigOf } from '../config/config-namespace';
import { oauthConfig, publicConfig } from '../config/namespaces';
import { ProblemFilter } from '../http/problem.filter';
import { mcpRequestPermissions } from './mcp-tools';

/** Where a client of /mcp learns which authorization server to ask (RFC 9728). */
export const MCP_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource/mcp';

/**
 * The key check's refusals on /mcp, answered as on REST (problem+json) with the challenge MCP's
 * authorization spec asks for (RFC 6750 §3, RFC 9728 §5.1): a 401 names the resource metadata and the
 * default scopes, with `invalid_token` when a credential was presented; a 403 for a missing permission
 * is `insufficient_scope` naming the permission the call needs.
 */
@Catch()
export class McpChallengeFilter extends ProblemFilter {
  private readonly resourceMetadata: string;

  constructor(
    @Inject(publicConfig.KEY) publicUrl: ConfigOf<typeof publicConfig>,
    @Inject(oauthConfig.KEY) private readonly oauth: ConfigOf<typeof oauthConfig>,
  ) {
    super();
    this.resourceMetadata = `${publicUrl.url}${MCP_RESOURCE_METADATA_PATH}`;
  }

  override catch(exception: unknown, host: ArgumentsHost): void {
    if (exception instanceof ProblemException) {
      const challenge = this.challengeOf(exception, host.switchToHttp().getRequest());
      if (challenge) exception = withHeader(exception, 'WWW-Authenticate', challenge);
    }
    super.catch(exception, host);
  }

  private challengeOf(exception: ProblemException, request: Request): string | undefined {
    const metadata = `resource_metadata="${this.resourceMetadata}"`;
    if (exception.getStatus() === 401) {
      const presented = exception.code !== AccessDenialCode.MissingCredentials;
      return `Bearer ${presented ? 'error="invalid_token", ' : ''}${metadata}, scope="${this.oauth.defaultScopes.join(' ')}"`;
    }
    if (exception.getStatus() === 403 && exception.code === AccessDenialCode.Forbidden) {
      const held = request.principal?.permissions;
      const needed = mcpRequestPermissions(request.body).filter((permission) => !held?.has(permission));
      return `Bearer error="insufficient_scope", scope="${needed.join(' ')}", ${metadata}`;
    }
    return undefined;
  }
}

function withHeader(problem: ProblemException, name: string, value: string): ProblemException {
  const { detail } = problem.getResponse() as { detail: string };
  return new ProblemException(problem.getStatus(), problem.code, detail, problem.extensions, {
    ...problem.headers,
    [name]: value,
  });
}
