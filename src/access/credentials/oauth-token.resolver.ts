import { Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { ConfigOf } from '../../config/config-namespace';
import { oauthConfig, publicConfig } from '../../config/namespaces';
import { OAuthTokens } from '../../oauth/oauth-tokens';
import { intersectPermissions, isPermission, type Permission } from '../../roles/permissions';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import type { KeyContext, Principal } from '../principal';
import { AccessTokenResolver } from './access-token.resolver';

/** The path of the MCP server: a token issued for `<PUBLIC_URL>/mcp` is accepted there and only there. */
const MCP_PATH = /^\/mcp(\/|$)/;

/**
 * An OAuth access token (issued by this service's authorization server, src/oauth/) to a Principal: the
 * user who consented, in their organization, with the granted scopes intersected with what that user
 * holds now (as a personal key never exceeds its owner); a deactivated user is refused as their access
 * token is. The token is accepted only at the resource it was issued for (RFC 8707): `/mcp`, or the REST
 * API for `/v1`. Every lookup reads the token's grant from PostgreSQL, so a revoked grant is refused on
 * every instance at its next request, whatever Redis does.
 */
@Injectable()
export class OAuthTokenResolver {
  private readonly mcpResource: string;
  private readonly restResource: string;

  constructor(
    private readonly tokens: OAuthTokens,
    private readonly users: AccessTokenResolver,
    @Inject(publicConfig.KEY) publicUrl: ConfigOf<typeof publicConfig>,
    @Inject(oauthConfig.KEY) private readonly config: ConfigOf<typeof oauthConfig>,
  ) {
    this.mcpResource = `${publicUrl.url}/mcp`;
    this.restResource = `${publicUrl.url}/v1`;
  }

  async resolve(value: string, request: Request): Promise<Principal | AccessDenial> {
    const token = await this.tokens.resolve(value);
    if (!token)
      return new AccessDenial(AccessDenialCode.InvalidCredentials, 'The access token is not valid.');
    const resource = MCP_PATH.test(request.path) ? this.mcpResource : this.restResource;
    if (token.resource !== resource) {
      return new AccessDenial(
        AccessDenialCode.InvalidToken,
        `The access token was issued for ${token.resource}, not for ${resource}.`,
      );
    }
    const user = await this.users.byId(token.organizationId, token.userId);
    if (user instanceof AccessDenial) return user;
    const granted = new Set<Permission>(token.scopes.filter(isPermission));
    return {
      ...user,
      permissions: intersectPermissions(user.permissions, granted),
      oauth: { grantId: token.grantId, clientId: token.clientId, windows: this.windowsOf(token.grantId) },
    };
  }

  /** The grant's rate-limit windows, as a key's are counted (RateLimitStep), under the grant's id. */
  private windowsOf(grantId: string): KeyContext {
    return Object.freeze({
      id: grantId,
      name: grantId,
      type: 'service',
      expiresAt: null,
      presentedVia: 'bearer',
      hideCredentials: false,
      allowedIps: [],
      allowedReferrers: [],
      rateLimit: { perMinute: this.config.requestsPerMinute, perHour: this.config.requestsPerHour },
      meta: {},
      identity: null,
      credits: null,
      identityControls: null,
    });
  }
}
