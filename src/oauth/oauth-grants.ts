import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { type AuditActor, AuditService } from '../audit/audit.service';
import { EventsService } from '../events/events.service';
import type { OAuthClientRegisteredData, OAuthGrantEventData } from './dto/oauth-events.dto';
import type { OAuthAuditAction } from './oauth.declarations';
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
  constructor(
    private readonly records: OAuthRecordsRepository,
    private readonly audit: AuditService,
    private readonly events: EventsService,
  ) {}

  /**
   * A user's consent saved as its grant (new, or the same client's grant widened): a new one is audited
   * and sent as `oauth.grant_created`, after `oauth.client_registered` when it is the organization's first
   * grant of that client; all in the grant's transaction.
   */
  async consented(grant: OAuthGrant, isNew: boolean): Promise<void> {
    await this.records.saveGrant(grant, async (manager, firstOfClient) => {
      if (!isNew) return;
      const actor = grantActor(grant);
      if (firstOfClient) {
        await this.record(manager, grant.organizationId, 'oauth.client_registered', actor, {
          client: clientOf(grant),
          actor,
        } satisfies OAuthClientRegisteredData);
      }
      await this.record(manager, grant.organizationId, 'oauth.grant_created', actor, eventData(grant, actor));
    });
  }

  async list(organizationId: string, userId?: string): Promise<GrantSummary[]> {
    return (await this.records.listGrants(organizationId, userId)).map(grantSummary);
  }

  /** One grant of the organization (`userId`: only if it is that user's), or null. */
  async get(organizationId: string, id: string, userId?: string): Promise<GrantSummary | null> {
    const grant = await this.records.findGrant(organizationId, id);
    if (!grant || (userId !== undefined && grant.userId !== userId)) return null;
    return grantSummary(grant);
  }

  /**
   * Ends a grant (`userId`: only if it is that user's) with its `oauth.grant_revoked` entry and event by
   * `actor` (the system's when none: a grant ended by the service itself).
   */
  async revoke(
    organizationId: string,
    id: string,
    userId?: string,
    actor: AuditActor = { type: 'system', id: null },
  ): Promise<boolean> {
    const grant = await this.records.findGrant(organizationId, id);
    if (!grant || (userId !== undefined && grant.userId !== userId)) return false;
    await this.records.endGrant(grant, (manager) =>
      this.record(manager, organizationId, 'oauth.grant_revoked', actor, eventData(grant, actor)),
    );
    return true;
  }

  private async record(
    manager: EntityManager,
    organizationId: string,
    action: OAuthAuditAction,
    actor: AuditActor,
    data: OAuthGrantEventData | OAuthClientRegisteredData,
  ): Promise<void> {
    const { actor: _actor, ...details } = data;
    await this.audit.append(manager, [{ organizationId, action, actor, details }]);
    await this.events.record(manager, [{ organizationId, type: action, data: { ...data } }]);
  }
}

/** The consenting user acting through the client. */
const grantActor = (grant: OAuthGrant): AuditActor => ({
  type: 'user',
  id: grant.userId,
  client_id: grant.clientId,
});

const clientOf = (grant: OAuthGrant) => ({ client_id: grant.clientId, client_name: grant.clientName });

function eventData(grant: OAuthGrant, actor: AuditActor): OAuthGrantEventData {
  return {
    grant_id: grant.id,
    user_id: grant.userId,
    client: clientOf(grant),
    scopes: grant.scopes,
    resource: grant.resource,
    actor: { type: actor.type, id: actor.id },
  };
}
