import { Injectable } from '@nestjs/common';
import type { OAuthGrant } from './oauth-grant.entity';
import { OAuthRecordsRepository } from './oauth-records.repository';

/** A grant as GET /v1/oauth/grants lists it. */
export interface GrantSummary {
  id: string;
  client: { client_id: string; client_name: string | null };
  user_id: string;
  scopes: string[];
  resource: string;
  created_at: string;
  last_used_at: string | null;
}

export const grantSummary = (grant: OAuthGrant): GrantSummary => ({
  id: grant.id,
  client: { client_id: grant.clientId, client_name: grant.clientName },
  user_id: grant.userId,
  scopes: grant.scopes,
  resource: grant.resource,
  created_at: grant.createdAt.toISOString(),
  last_used_at: grant.lastUsedAt?.toISOString() ?? null,
});

/**
 * The organization's grants, for `/v1/oauth/grants` (not served yet): always scoped by organization.
 * `list(organizationId, userId?)` lists one user's grants or, without a user, the organization's;
 * `revoke(organizationId, id, userId?)` ends one (its tokens and codes are deleted at once, so every
 * instance refuses them from then on) and answers false when the organization (or user) has no such grant.
 */
@Injectable()
export class OAuthGrants {
  constructor(private readonly records: OAuthRecordsRepository) {}

  async list(organizationId: string, userId?: string): Promise<GrantSummary[]> {
    return (await this.records.listGrants(organizationId, userId)).map(grantSummary);
  }

  async get(organizationId: string, id: string): Promise<GrantSummary | null> {
    const grant = await this.records.findGrant(organizationId, id);
    return grant ? grantSummary(grant) : null;
  }

  async revoke(organizationId: string, id: string, userId?: string): Promise<boolean> {
    const grant = await this.records.findGrant(organizationId, id);
    if (!grant || (userId !== undefined && grant.userId !== userId)) return false;
    await this.records.endGrant(grant);
    return true;
  }
}
