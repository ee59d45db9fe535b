import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { OAuthRecordsRepository } from './oauth-records.repository';
import { OAuthServer } from './oauth-server';

/** What an OAuth access token stands for, when it still stands for anything. */
export interface ResolvedOAuthToken {
  /** The `grant_…` id (GET /v1/oauth/grants). */
  grantId: string;
  clientId: string;
  clientName: string | null;
  /** The user who consented; the token acts for them, in their organization. */
  userId: string;
  organizationId: string;
  /** The granted permission names; the access layer intersects them with the user's at each request. */
  scopes: string[];
  /** `<PUBLIC_URL>/mcp` or `<PUBLIC_URL>/v1`: the token is accepted there only. */
  resource: string;
  expiresAt: Date;
}

/**
 * OAuth access tokens for other modules. The access layer (src/access/), making OAuth access tokens a
 * credential kind, should call `resolve(value)` with the presented bearer value: null means unknown,
 * expired or revoked (answer 401 `invalid_token`); otherwise check `resource` against the route's
 * (`/mcp` or `/v1`), load the user (a deactivated one: 401), take `scopes ∩ the user's permissions` as
 * the principal's permissions, rate-limit by `grantId` (OAUTH_REQUESTS_PER_MINUTE / _HOUR) and audit as
 * `actor: {type: "user", id: userId, client_id: clientId}`. Every lookup reads PostgreSQL, so a revoked
 * grant stops on every instance at once. `used(grantId)` records the grant's `last_used_at`.
 */
@Injectable()
export class OAuthTokens {
  constructor(
    private readonly server: OAuthServer,
    private readonly records: OAuthRecordsRepository,
    private readonly clock: Clock,
  ) {}

  async resolve(value: string): Promise<ResolvedOAuthToken | null> {
    if (!value || value.length > 512) return null;
    const token = await this.server.provider.AccessToken.find(value).catch(() => undefined);
    if (!token || token.isExpired || !token.grantId) return null;
    const grant = await this.records.findGrantByProviderId(token.grantId);
    if (!grant) return null;
    return {
      grantId: grant.id,
      clientId: grant.clientId,
      clientName: grant.clientName,
      userId: grant.userId,
      organizationId: grant.organizationId,
      scopes: (token.scope ?? '').split(' ').filter(Boolean),
      resource: Array.isArray(token.aud) ? token.aud[0] : (token.aud ?? grant.resource),
      expiresAt: new Date(token.exp * 1000),
    };
  }

  /** Records a use of the grant now (its `last_used_at`). */
  async used(grantId: string): Promise<void> {
    await this.records.touchGrant(grantId, this.clock.date());
  }
}
