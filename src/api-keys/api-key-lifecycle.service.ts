import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Principal } from '../access/principal';
import { actorOf, RequestOrigin } from '../audit/audit.service';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { Clock } from '../common/clock';
import { creditColumnsAsSet } from '../common/credit-balance.columns';
import { newId } from '../common/ids';
import { isForeignKeyViolation } from '../database/database-errors';
import { unknownIdentity } from '../identities/identities.service';
import { ApiKeyValues, keyStart } from './api-key-format';
import { ApiKey } from './api-key.entity';
import { ApiKeyQueryService } from './api-key-query.service';
import { API_KEY_ID } from './api-keys.declarations';
import { ApiKeyError, ApiKeyErrorCode } from './api-keys.errors';
import { ApiKeysRepository } from './api-keys.repository';
import { creditStateOf, CreditsService } from './credits/credits.service';
import { CreateApiKeyDto, UpdateApiKeyDto } from './dto/api-key.dto';
import { ApiKeyResponse, CreatedApiKeyResponse } from './dto/api-key-response.dto';
import type { KeyChange } from './key-change-recorder';
import { KeyChangeRecorder } from './key-change-recorder';
import { recordedSettings, settingChanges } from './key-setting-changes';
import { KeySettingChecks } from './key-setting-checks';
import { applyRotationPolicy } from './rotation-policy';

/** api_keys.identity_id's foreign key: the identity went between the check and the write. */
const IDENTITY_FOREIGN_KEY = 'api_keys_identity_id_fkey';

/**
 * A key's life by request: created, changed (its settings and controls: credits, enabled, limits,
 * restrictions), deleted. Every change commits together with its audit entry, then tells every key
 * cache. Reads are ApiKeyQueryService's, a new value for a live key ApiKeyRotationService's, and the
 * revocation that follows an owner's deactivation PersonalKeyRevocation's: each its own reason to change.
 */
@Injectable()
export class ApiKeyLifecycleService {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly queries: ApiKeyQueryService,
    private readonly checks: KeySettingChecks,
    private readonly changes: KeyChangeRecorder,
    private readonly invalidations: InvalidationBus,
    private readonly values: ApiKeyValues,
    private readonly credits: CreditsService,
    private readonly clock: Clock,
  ) {}

  async create(
    principal: Principal,
    dto: CreateApiKeyDto,
    origin: RequestOrigin,
  ): Promise<CreatedApiKeyResponse> {
    const type = dto.type ?? 'personal';
    await this.checks.assertGrantableRole(principal, dto.role);
    if (type === 'personal' && !principal.userId) {
      throw new ApiKeyError(
        ApiKeyErrorCode.OwnerRequired,
        'A personal key needs a user to act for; use a team or service key.',
        {
          errors: [
            { field: 'type', message: 'personal keys can only be created by a user or a personal key' },
          ],
        },
      );
    }
    const teamId = await this.checks.team(principal, type, dto.team_id);
    const identityId = await this.checks.identity(principal, dto.identity_id);
    await this.checks.assertExpirationAllowed(principal, dto.expiration ? new Date(dto.expiration) : null);

    const value = this.values.generate();
    const now = new Date();
    const key = this.keys.newKey({
      id: newId(API_KEY_ID),
      organizationId: principal.organizationId,
      name: dto.name,
      description: dto.description ?? null,
      role: dto.role,
      type,
      ownerId: principal.userId,
      teamId,
      keyHash: this.values.hash(value),
      start: keyStart(value),
      previousKeyHash: null,
      previousKeyExpiresAt: null,
      previousKeyLastUsedAt: null,
      expiration: dto.expiration ? new Date(dto.expiration) : null,
      expiryRecordedAt: null,
      expiryWarnedAt: null,
      revokedAt: null,
      revokedReason: null,
      deletedAt: null,
      lastUsedAt: null,
      lastRotatedAt: null,
      allowedReferrers: dto.allowed_referrers ?? [],
      allowedIps: dto.allowed_ips ?? [],
      hideCredentials: dto.hide_credentials ?? false,
      enabled: dto.enabled ?? true,
      meta: dto.meta ?? null,
      // Refills count from when the balance was set, on the clock the refills run by.
      ...creditColumnsAsSet(dto.credits ?? null, this.clock.date()),
      creditsRefilledAt: null,
      creditsGeneration: 0,
      creditsLowGeneration: null,
      lastUsedIp: null,
      identityId,
    });
    applyRotationPolicy(key, dto.rotation_policy, now);
    applyRateLimit(key, dto.rate_limit);

    const saved = await this.transaction(async (manager) => {
      const row = await this.keys.save(manager, key);
      await this.changes.record(manager, [
        {
          key: row,
          action: 'key.created',
          actor: actorOf(principal),
          origin,
          details: { name: row.name, role: row.role, type: row.type },
        },
      ]);
      return row;
    });
    if (saved.creditsRemaining !== null) await this.credits.published(saved, creditStateOf(saved));
    const [response] = await this.queries.present([saved]);
    return { ...response, key: value };
  }

  async update(
    principal: Principal,
    id: string,
    dto: UpdateApiKeyDto,
    origin: RequestOrigin,
  ): Promise<ApiKeyResponse> {
    const key = await this.queries.findManageable(principal, id);
    if (key.revokedAt)
      throw new ApiKeyError(ApiKeyErrorCode.KeyNotActive, 'A revoked key cannot be changed.');
    const changed: string[] = Object.keys(dto).filter(
      (field) => field !== 'enabled' && (dto as Record<string, unknown>)[field] !== undefined,
    );
    const switched = dto.enabled !== undefined && dto.enabled !== key.enabled;
    // Read before the entity changes in place: the audit entry shows each setting before and after.
    const before = recordedSettings(key);

    if (dto.role !== undefined && dto.role !== key.role) {
      await this.checks.assertGrantableRole(principal, dto.role);
      key.role = dto.role;
    }
    if (dto.team_id !== undefined) key.teamId = await this.checks.team(principal, key.type, dto.team_id);
    if (dto.name !== undefined) key.name = dto.name;
    if (dto.description !== undefined) key.description = dto.description;
    if (dto.expiration !== undefined) {
      // Only a change of expiration meets the policy: a key made before a rule keeps its other settings
      // editable (its kill switch above all) and is listed by ?violates_policy=true instead.
      await this.checks.assertExpirationAllowed(principal, dto.expiration ? new Date(dto.expiration) : null);
      key.expiration = dto.expiration ? new Date(dto.expiration) : null;
      key.expiryRecordedAt = null;
      key.expiryWarnedAt = null;
    }
    if (dto.rotation_policy !== undefined) applyRotationPolicy(key, dto.rotation_policy, new Date());
    if (dto.rate_limit !== undefined) applyRateLimit(key, dto.rate_limit);
    if (dto.allowed_referrers !== undefined) key.allowedReferrers = dto.allowed_referrers;
    if (dto.allowed_ips !== undefined) key.allowedIps = dto.allowed_ips;
    if (dto.hide_credentials !== undefined) key.hideCredentials = dto.hide_credentials;
    if (dto.enabled !== undefined) key.enabled = dto.enabled;
    if (dto.meta !== undefined) key.meta = dto.meta;
    if (dto.identity_id !== undefined)
      key.identityId = await this.checks.identity(principal, dto.identity_id);

    const now = this.clock.date();
    const saved = await this.transaction(async (manager) => {
      const row = await this.keys.save(manager, key);
      if (dto.credits !== undefined) {
        Object.assign(row, creditColumnsAsSet(dto.credits, now), {
          creditsGeneration: await this.keys.credits.set(manager, row.id, dto.credits, now),
        });
      }
      const records: KeyChange[] = [];
      const actor = actorOf(principal);
      if (changed.length || !switched) {
        const changes = settingChanges(before, recordedSettings(row), changed);
        const details = { fields: changed.sort(), ...(Object.keys(changes).length ? { changes } : {}) };
        records.push({ key: row, action: 'key.updated', actor, origin, details });
      }
      if (switched) {
        const action = row.enabled ? 'key.enabled' : 'key.disabled';
        records.push({ key: row, action, actor, origin, details: { enabled: row.enabled } });
      }
      await this.changes.record(manager, records);
      return row;
    });
    // After commit: the new balance is the live one everywhere, then every key cache drops the record.
    if (dto.credits) await this.credits.published(saved, creditStateOf(saved));
    this.invalidations.publish({ kind: 'key', keyId: saved.id });
    const [response] = await this.queries.present([saved]);
    return response;
  }

  async delete(principal: Principal, id: string, origin: RequestOrigin): Promise<void> {
    const key = await this.queries.findManageable(principal, id);
    await this.keys.transaction(async (manager) => {
      await this.keys.markDeleted(manager, key.id);
      await this.changes.record(manager, [
        { key, action: 'key.deleted', actor: actorOf(principal), origin, details: { name: key.name } },
      ]);
    });
    this.invalidations.publish({ kind: 'key', keyId: key.id });
  }

  /** A key write: an identity deleted between its check and the write is unknown_identity, not a 500. */
  private async transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    try {
      return await this.keys.transaction(work);
    } catch (error) {
      if (isForeignKeyViolation(error, IDENTITY_FOREIGN_KEY)) throw unknownIdentity();
      throw error;
    }
  }
}

function applyRateLimit(key: ApiKey, limit: CreateApiKeyDto['rate_limit']): void {
  key.rateLimitPerMinute = limit?.requests_per_minute ?? null;
  key.rateLimitPerHour = limit?.requests_per_hour ?? null;
}
