import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { Invalidation, InvalidationBus } from '../../cache-invalidation/invalidation-bus';
import type { Request } from 'express';
import { ConfigOf } from '../../config/config-namespace';
import { oauthConfig, publicConfig } from '../../config/namespaces';
import { OAuthTokens, type ResolvedOAuthToken } from '../../oauth/oauth-tokens';
import { intersectPermissions, isPermission, type Permission } from '../../roles/permissions';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import type { KeyContext, Principal } from '../principal';
import { AccessTokenResolver } from './access-token.resolver';
import { ConnectionHashMemo } from './connection-hash-memo';
import { CredentialCache } from './credential-cache';
import { isMcpRequest } from '../../mcp/mcp-http';
import { A2A_PATH, isA2aRequest } from '../../a2a/a2a-http';

/** A token as the key check needs it, cached by the hash of its value: what it is, and whom it acts for. */
interface ResolvedGrantToken {
  token: ResolvedOAuthToken;
  /** The consenting user's principal as the grant narrows it, or why the user is refused (deactivated). */
  principal: Principal | AccessDenial;
}

/** What a change touches among cached tokens: the grant, the consenting user, or the organization's roles. */
function grantTokenTouchedBy({ token }: ResolvedGrantToken, invalidation: Invalidation): boolean {
  return (
    (invalidation.kind === 'oauth_grant' && token.grantId === invalidation.grantId) ||
    (invalidation.kind === 'user' && token.userId === invalidation.userId) ||
    (invalidation.kind === 'organization' && token.organizationId === invalidation.organizationId)
  );
}

/** What the authorization server issues: 256 random bits as 43 base64url characters (oidc-provider's default). */
const OAUTH_TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** A grant's `last_used_at` is written at most this often per instance: a hot token costs no write per request. */
const LAST_USED_EVERY_MS = 60_000;

/**
 * An OAuth access token (issued by this service's authorization server, src/oauth/) to a Principal: the
 * user who consented, in their organization, with the granted scopes intersected with what that user
 * holds now (as a personal key never exceeds its owner); a deactivated user is refused as their access
 * token is. The token is accepted only at the resource it was issued for (RFC 8707): `/mcp`, or the REST
 * API for `/v1`. What a token stands for is cached as API keys are (CredentialCache): a revoked grant, a
 * changed user or role drop it on every instance through the invalidation bus, and while the bus cannot
 * hear other instances an entry is trusted for a second only, so a revoked grant is refused everywhere
 * within a second whatever Redis does.
 */
@Injectable()
export class OAuthTokenResolver {
  private readonly mcpResource: string;
  private readonly restResource: string;
  private readonly a2aResource: string;
  private readonly cache: CredentialCache<ResolvedGrantToken>;
  /** A connection's last token and its hash, as for API keys (see ConnectionHashMemo for why it is safe). */
  private readonly hashes = new ConnectionHashMemo();
  private readonly lastUsedWritten = new LRUCache<string, true>({ max: 50_000, ttl: LAST_USED_EVERY_MS });
  private readonly logger = new Logger(OAuthTokenResolver.name);

  constructor(
    bus: InvalidationBus,
    private readonly tokens: OAuthTokens,
    private readonly users: AccessTokenResolver,
    @Inject(publicConfig.KEY) publicUrl: ConfigOf<typeof publicConfig>,
    @Inject(oauthConfig.KEY) private readonly config: ConfigOf<typeof oauthConfig>,
  ) {
    this.mcpResource = `${publicUrl.url}/mcp`;
    this.restResource = `${publicUrl.url}/v1`;
    this.a2aResource = `${publicUrl.url}${A2A_PATH}`;
    this.cache = new CredentialCache(bus, grantTokenTouchedBy);
  }

  looksLikeOAuthToken(value: string): boolean {
    return OAUTH_TOKEN_SHAPE.test(value);
  }

  /**
   * The token's principal, or why it is refused. A value of a token's shape that is no live token (unknown,
   * expired, revoked) is refused as a malformed key would be, since it may as well be one: 401 either way.
   */
  resolve(value: string, request: Request): Principal | AccessDenial | Promise<Principal | AccessDenial> {
    let hash = this.hashes.recall(request.socket, value);
    if (hash === undefined) {
      hash = createHash('sha256').update(value).digest('base64url');
      this.hashes.remember(request.socket, value, hash);
    }
    const resolved = this.cache.resolve(hash, () => this.loadToken(value));
    return resolved instanceof Promise
      ? resolved.then((loaded) => this.admit(loaded, request))
      : this.admit(resolved, request);
  }

  private admit(resolved: ResolvedGrantToken | null, request: Request): Principal | AccessDenial {
    if (!resolved || resolved.token.expiresAt.getTime() <= Date.now()) {
      return new AccessDenial(
        AccessDenialCode.MalformedKey,
        'The credential is neither a well-formed API key nor a live OAuth access token.',
      );
    }
    const { token, principal } = resolved;
    const resource = isMcpRequest(request.originalUrl)
      ? this.mcpResource
      : isA2aRequest(request.originalUrl)
        ? this.a2aResource
        : this.restResource;
    if (token.resource !== resource) {
      // The token did resolve to its grant: the refusal counts in the grant's usage, as a revoked key's does.
      return new AccessDenial(
        AccessDenialCode.InvalidToken,
        `The access token was issued for ${token.resource}, not for ${resource}.`,
      ).about({ organizationId: token.organizationId, id: token.grantId }, null);
    }
    if (principal instanceof AccessDenial) {
      // The consenting user is refused (deactivated): counted in the grant's usage, on a denial of this
      // request's own (the user's may be shared by every request that names them).
      const { code, detail, headers, auditDetails, problemFields } = principal;
      return new AccessDenial(code, detail, headers, auditDetails, problemFields).about(
        { organizationId: token.organizationId, id: token.grantId },
        null,
      );
    }
    this.markUsed(token.grantId);
    return principal;
  }

  /** Writes the grant's last use, once a minute at most, off the request's path. */
  private markUsed(grantId: string): void {
    if (this.lastUsedWritten.has(grantId)) return;
    this.lastUsedWritten.set(grantId, true);
    this.tokens
      .used(grantId)
      .catch((error: unknown) => this.logger.warn({ err: error }, 'last_used_at not written'));
  }

  /** The token's grant and the consenting user's principal narrowed to the granted scopes. */
  private async loadToken(value: string): Promise<ResolvedGrantToken | null> {
    const token = await this.tokens.resolve(value);
    if (!token) return null;
    const user = await this.users.byId(token.organizationId, token.userId);
    if (user instanceof AccessDenial) return { token, principal: user };
    const granted = new Set<Permission>(token.scopes.filter(isPermission));
    return {
      token,
      principal: {
        ...user,
        permissions: intersectPermissions(user.permissions, granted),
        oauth: {
          grantId: token.grantId,
          clientId: token.clientId,
          windows: this.windowsOf(token.grantId, token.organizationId),
        },
      },
    };
  }

  /** The grant's rate-limit windows, as a key's are counted (RateLimitStep), under the grant's id. */
  private windowsOf(grantId: string, organizationId: string): KeyContext {
    return Object.freeze({
      id: grantId,
      organizationId,
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
