import { Injectable } from '@nestjs/common';
import { creditColumnsAsSet } from '../common/credit-balance.columns';
import type { EntityManager } from 'typeorm';
import { actorOf, AuditActor, AuditService, RequestOrigin, SYSTEM_ACTOR } from '../audit/audit.service';
import type { CreditBalanceTable } from '../api-keys/credits/credit-balance-table';
import type { Principal } from '../access/principal';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { Clock } from '../common/clock';
import { isIdOf, newId } from '../common/ids';
import { Page } from '../common/pagination';
import type { RateLimitDto } from '../common/usage-controls.dto';
import { isUniqueViolation } from '../database/database-errors';
import type { IdentityEventData, IdentityEventDetails } from '../events/event-payloads.dto';
import { EventsService } from '../events/events.service';
import {
  CreateIdentityDto,
  IdentityResponse,
  IdentitySummaryResponse,
  ListIdentitiesQueryDto,
  UpdateIdentityDto,
} from './dto/identity.dto';
import { IDENTITY_ID } from './identities.declarations';
import { IdentityError, IdentityErrorCode } from './identities.errors';
import { IdentitiesRepository } from './identities.repository';
import { IdentityBalances } from './identity-balances';
import { IdentityKeys } from './identity-keys';
import { Identity } from './identity.entity';

const EXTERNAL_ID_KEY = 'identities_organization_external_id_key';

function identityExists(): IdentityError {
  return new IdentityError(
    IdentityErrorCode.IdentityExists,
    'An identity with this external_id already exists in the organization.',
    { errors: [{ field: 'external_id', message: 'external_id is taken' }] },
  );
}

/**
 * Identities, the customers behind keys: create, read, update, delete. Every change commits with its
 * audit entry and event; a change keys show (external_id, meta, deletion) then drops the cached
 * records of the keys that name the identity, on every instance.
 */
@Injectable()
export class IdentitiesService {
  constructor(
    private readonly identities: IdentitiesRepository,
    private readonly keys: IdentityKeys,
    private readonly balances: IdentityBalances,
    private readonly audit: AuditService,
    private readonly events: EventsService,
    private readonly invalidations: InvalidationBus,
    private readonly clock: Clock,
  ) {}

  async create(
    principal: Principal,
    dto: CreateIdentityDto,
    origin: RequestOrigin,
  ): Promise<IdentityResponse> {
    const now = this.clock.date();
    const identity = this.identities.newIdentity({
      id: newId(IDENTITY_ID),
      organizationId: principal.organizationId,
      externalId: dto.external_id,
      meta: dto.meta ?? null,
      ...rateLimitColumns(dto.rate_limit),
      ...creditColumnsAsSet(dto.credits ?? null, now),
      creditsRefilledAt: null,
      creditsGeneration: 0,
    });
    try {
      const saved = await this.identities.transaction(async (manager) => {
        // A new row is inserted whole, credit columns included (they are left alone only on update).
        const row = await this.identities.save(manager, identity);
        await this.record(manager, row, 'identity.created', {}, actorOf(principal), origin);
        return row;
      });
      await this.balances.published(saved);
      return IdentityResponse.of(saved, 0);
    } catch (error) {
      if (isUniqueViolation(error, EXTERNAL_ID_KEY)) throw identityExists();
      throw error;
    }
  }

  async list(principal: Principal, query: ListIdentitiesQueryDto): Promise<Page<IdentityResponse>> {
    const page = await this.identities.page(
      principal.organizationId,
      { externalId: query.external_id },
      query,
    );
    return { data: await this.present(principal.organizationId, page.data), next_cursor: page.next_cursor };
  }

  async get(principal: Principal, id: string): Promise<IdentityResponse> {
    const [response] = await this.present(principal.organizationId, [await this.find(principal, id)]);
    return response;
  }

  async update(
    principal: Principal,
    id: string,
    dto: UpdateIdentityDto,
    origin: RequestOrigin,
  ): Promise<IdentityResponse> {
    const existing = await this.find(principal, id);
    const fields = Object.keys(dto)
      .filter((field) => (dto as Record<string, unknown>)[field] !== undefined)
      .sort();
    const now = this.clock.date();
    try {
      const saved = await this.identities.transaction(async (manager) => {
        const identity = await this.identities.lockInOrganization(
          manager,
          principal.organizationId,
          existing.id,
        );
        if (!identity) throw notFound();
        if (dto.external_id !== undefined) identity.externalId = dto.external_id;
        if (dto.meta !== undefined) identity.meta = dto.meta;
        if (dto.rate_limit !== undefined) Object.assign(identity, rateLimitColumns(dto.rate_limit));
        // save() bumps updated_at even when only the credits change.
        let row = await this.identities.save(manager, identity);
        if (dto.credits !== undefined)
          row = await this.identities.setCredits(manager, row.id, dto.credits, now);
        await this.record(manager, row, 'identity.updated', { fields }, actorOf(principal), origin);
        return row;
      });
      // After commit: a new balance is the live one everywhere, then the key records that carry this
      // identity (its windows, its balance, what they show of it) are reloaded everywhere.
      if (dto.credits) await this.balances.published(saved);
      this.invalidations.publish({ kind: 'identity', identityId: saved.id });
      const [response] = await this.present(principal.organizationId, [saved]);
      return response;
    } catch (error) {
      if (isUniqueViolation(error, EXTERNAL_ID_KEY)) throw identityExists();
      throw error;
    }
  }

  /** Refused (409 identity_in_use) while keys that are not deleted name the identity. */
  async delete(principal: Principal, id: string, origin: RequestOrigin): Promise<void> {
    const existing = await this.find(principal, id);
    await this.identities.transaction(async (manager) => {
      // The lock waits for keys attaching to it now (their foreign key holds the row), so the count
      // below sees them; a key attaching after it commits finds no identity.
      const identity = await this.identities.lockInOrganization(
        manager,
        principal.organizationId,
        existing.id,
      );
      if (!identity) throw notFound();
      const count =
        (await this.keys.counts(principal.organizationId, [identity.id], manager)).get(identity.id) ?? 0;
      if (count > 0) {
        throw new IdentityError(
          IdentityErrorCode.IdentityInUse,
          `${count} key(s) still name this identity; detach them (identity_id: null) or delete them first.`,
        );
      }
      await this.identities.delete(manager, principal.organizationId, identity.id);
      await this.record(manager, identity, 'identity.deleted', {}, actorOf(principal), origin);
    });
    this.invalidations.publish({ kind: 'identity', identityId: existing.id });
  }

  /** The identity must exist in the caller's organization (404 otherwise, never 403). */
  async find(principal: Principal, id: string): Promise<Identity> {
    const identity = isIdOf(IDENTITY_ID, id)
      ? await this.identities.findInOrganization(principal.organizationId, id)
      : null;
    if (!identity) throw notFound();
    return identity;
  }

  /**
   * For a key naming `id`: the identity of the organization, or 400 unknown_identity (another
   * organization's identity is as unknown as one that never existed).
   */
  async requireForKey(organizationId: string, id: string): Promise<IdentitySummaryResponse> {
    const identity = isIdOf(IDENTITY_ID, id)
      ? await this.identities.findInOrganization(organizationId, id)
      : null;
    if (!identity) throw unknownIdentity();
    return IdentitySummaryResponse.of(identity);
  }

  /** The identities' credit balances, which the credit ledgers spend beside keys' (src/api-keys/credits). */
  get creditBalances(): CreditBalanceTable {
    return this.identities.credits;
  }

  /** Identities whose balance may be due a refill (the scheduled refill scan). */
  withRefillBefore(before: Date, limit: number): Promise<Identity[]> {
    return this.identities.withRefillBefore(before, limit);
  }

  /**
   * `identity.credits_low`, once per generation of the balance: `claim` marks it sent on the row in the
   * same transaction as the audit entry and the event, so whichever instance crossed the mark records it.
   */
  async recordCreditsLow(
    identity: Pick<Identity, 'id' | 'organizationId' | 'externalId'>,
    details: IdentityEventDetails['identity.credits_low'],
    claim: (manager: EntityManager) => Promise<boolean>,
  ): Promise<void> {
    await this.identities.transaction(async (manager) => {
      if (!(await claim(manager))) return;
      await this.record(manager, identity, 'identity.credits_low', details, SYSTEM_ACTOR);
    });
  }

  /** The identity's row, for the key check's record of a key that names it (null: not in the organization). */
  row(organizationId: string, id: string): Promise<Identity | null> {
    return this.identities.findInOrganization(organizationId, id);
  }

  /** What key objects show of their identities, by id (the organization's only). */
  async summaries(organizationId: string, ids: string[]): Promise<Map<string, IdentitySummaryResponse>> {
    const unique = [...new Set(ids)];
    const rows = await this.identities.findManyInOrganization(organizationId, unique);
    return new Map(rows.map((row) => [row.id, IdentitySummaryResponse.of(row)]));
  }

  private async present(organizationId: string, identities: Identity[]): Promise<IdentityResponse[]> {
    const [counts, balances] = await Promise.all([
      this.keys.counts(
        organizationId,
        identities.map((identity) => identity.id),
      ),
      this.balances.live(identities),
    ]);
    return identities.map((identity) =>
      IdentityResponse.of(identity, counts.get(identity.id) ?? 0, balances.get(identity.id)),
    );
  }

  /** The audit entry and the outbox event of a change, in its transaction. */
  private async record<Action extends keyof IdentityEventDetails>(
    manager: EntityManager,
    identity: Pick<Identity, 'id' | 'organizationId' | 'externalId'>,
    action: Action,
    details: IdentityEventDetails[Action],
    actor: AuditActor,
    origin?: RequestOrigin,
  ): Promise<void> {
    await this.audit.append(manager, [
      {
        organizationId: identity.organizationId,
        action,
        actor,
        origin,
        details: { identity_id: identity.id, external_id: identity.externalId, ...details },
      },
    ]);
    await this.events.record(manager, [
      {
        organizationId: identity.organizationId,
        type: action,
        data: {
          identity_id: identity.id,
          external_id: identity.externalId,
          actor,
          ...details,
        } satisfies IdentityEventData,
      },
    ]);
  }
}

function notFound(): IdentityError {
  return new IdentityError(IdentityErrorCode.NotFound, 'The identity was not found.');
}

export function unknownIdentity(): IdentityError {
  return new IdentityError(IdentityErrorCode.UnknownIdentity, 'The identity does not exist.', {
    errors: [{ field: 'identity_id', message: 'identity not found in this organization' }],
  });
}

function rateLimitColumns(limit: RateLimitDto | null | undefined): Partial<Identity> {
  return {
    rateLimitPerMinute: limit?.requests_per_minute ?? null,
    rateLimitPerHour: limit?.requests_per_hour ?? null,
  };
}
