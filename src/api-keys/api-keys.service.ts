import { Inject, Injectable } from '@nestjs/common';
import { creditColumnsAsSet } from '../common/credit-balance.columns';
import { EntityManager } from 'typeorm';
import { TeamsService } from '../accounts/teams.service';
import { UserLifecycle } from '../accounts/user-lifecycle';
import { actorOf, RequestOrigin } from '../audit/audit.service';
import { AuditSubjects } from '../audit/audit-subjects';
import type { Principal } from '../access/principal';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { isIdOf, newId } from '../common/ids';
import { API_KEY_ID } from './api-keys.declarations';
import { Page } from '../common/pagination';
import { assertWithinPrincipal } from '../roles/escalation';
import type { Permission } from '../roles/permissions';
import { RoleHolders } from '../roles/role-holders';
import { RolesService } from '../roles/roles.service';
import { ApiKeyValues, keyStart } from './api-key-format';
import { ApiKey, keyStatus } from './api-key.entity';
import { ApiKeysRepository } from './api-keys.repository';
import { KeyChangeRecorder } from './key-change-recorder';
import { KeyPermissions } from './key-permissions';
import { CreateApiKeyDto, ListApiKeysQueryDto, RotateApiKeyDto, UpdateApiKeyDto } from './dto/api-key.dto';
import { ApiKeyResponse, CreatedApiKeyResponse } from './dto/api-key-response.dto';
import { ApiKeyError, ApiKeyErrorCode } from './api-keys.errors';
import { Clock } from '../common/clock';
import { creditStateOf, CreditsService } from './credits/credits.service';
import type { KeyChange } from './key-change-recorder';
import { isForeignKeyViolation } from '../database/database-errors';
import { IdentitiesService, unknownIdentity } from '../identities/identities.service';
import { IdentityKeys } from '../identities/identity-keys';
import { OrganizationPoliciesService } from '../organization-policies/organization-policies.service';

/** api_keys.identity_id's foreign key: the identity went between the check and the write. */
const IDENTITY_FOREIGN_KEY = 'api_keys_identity_id_fkey';

const DAY_MS = 86_400_000;

/**
 * The key lifecycle: create, read, update, rotate, delete, and revocation when a personal key's owner
 * is deactivated. Every change commits together with its audit entry, then tells every key cache.
 */
@Injectable()
export class ApiKeysService {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly grants: KeyPermissions,
    private readonly teams: TeamsService,
    private readonly roles: RolesService,
    private readonly changes: KeyChangeRecorder,
    private readonly invalidations: InvalidationBus,
    private readonly values: ApiKeyValues,
    private readonly credits: CreditsService,
    private readonly clock: Clock,
    private readonly identities: IdentitiesService,
    private readonly policies: OrganizationPoliciesService,
    @Inject(UserLifecycle) lifecycle: UserLifecycle,
    holders: RoleHolders,
    identityKeys: IdentityKeys,
    auditSubjects: AuditSubjects,
  ) {
    // The audit log names keys, deleted ones too (GET /v1/audit-log?expand=actor,key).
    auditSubjects.register('api_key', (organizationId, ids) => this.keys.auditNamesOf(organizationId, ids));
    identityKeys.register((organizationId, identityIds, manager) =>
      this.keys.countByIdentity(organizationId, identityIds, manager),
    );
    lifecycle.onDeactivated((event, manager) =>
      this.revokePersonalKeys(manager, event.organizationId, event.userId, actorOf(event.actor)),
    );
    holders.register((manager, organizationId, role) => this.keys.holdsRole(manager, organizationId, role));
  }

  async create(
    principal: Principal,
    dto: CreateApiKeyDto,
    origin: RequestOrigin,
  ): Promise<CreatedApiKeyResponse> {
    const type = dto.type ?? 'personal';
    const rolePermissions = await this.roles.requireRole(principal.organizationId, dto.role);
    assertWithinPrincipal(principal, rolePermissions, 'The key');
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
    const teamId = await this.checkTeam(principal, type, dto.team_id);
    const identityId = await this.checkIdentity(principal, dto.identity_id);
    await this.policies.assertExpirationAllowed(
      principal.organizationId,
      dto.expiration ? new Date(dto.expiration) : null,
    );

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
    if (saved.creditsRemaining !== null) await this.credits.published(saved.id, creditStateOf(saved));
    const [response] = await this.present([saved]);
    return { ...response, key: value };
  }

  async list(principal: Principal, query: ListApiKeysQueryDto): Promise<Page<ApiKeyResponse>> {
    const policy =
      query.violates_policy === undefined
        ? undefined
        : await this.policies.forOrganization(principal.organizationId);
    const page = await this.keys.page(
      principal.organizationId,
      {
        type: query.type,
        status: query.status,
        ownerId: query.owner_id,
        teamId: query.team_id,
        identityId: query.identity_id,
        search: query.search || undefined,
        violatesPolicy: policy && {
          violates: query.violates_policy!,
          requireExpiration: policy.requireExpiration,
          maxKeyLifetimeDays: policy.maxKeyLifetimeDays,
        },
      },
      query,
    );
    return { data: await this.present(page.data), next_cursor: page.next_cursor };
  }

  async get(principal: Principal, id: string): Promise<ApiKeyResponse> {
    const [response] = await this.present([await this.find(principal, id)]);
    return response;
  }

  async update(
    principal: Principal,
    id: string,
    dto: UpdateApiKeyDto,
    origin: RequestOrigin,
  ): Promise<ApiKeyResponse> {
    const key = await this.findManageable(principal, id);
    if (key.revokedAt)
      throw new ApiKeyError(ApiKeyErrorCode.KeyNotActive, 'A revoked key cannot be changed.');
    const changed: string[] = Object.keys(dto).filter(
      (field) => field !== 'enabled' && (dto as Record<string, unknown>)[field] !== undefined,
    );
    const switched = dto.enabled !== undefined && dto.enabled !== key.enabled;

    if (dto.role !== undefined && dto.role !== key.role) {
      assertWithinPrincipal(
        principal,
        await this.roles.requireRole(principal.organizationId, dto.role),
        'The key',
      );
      key.role = dto.role;
    }
    if (dto.team_id !== undefined) key.teamId = await this.checkTeam(principal, key.type, dto.team_id);
    if (dto.name !== undefined) key.name = dto.name;
    if (dto.description !== undefined) key.description = dto.description;
    if (dto.expiration !== undefined) {
      // Only a change of expiration meets the policy: a key made before a rule keeps its other settings
      // editable (its kill switch above all) and is listed by ?violates_policy=true instead.
      await this.policies.assertExpirationAllowed(
        principal.organizationId,
        dto.expiration ? new Date(dto.expiration) : null,
      );
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
    if (dto.identity_id !== undefined) key.identityId = await this.checkIdentity(principal, dto.identity_id);

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
        records.push({ key: row, action: 'key.updated', actor, origin, details: { fields: changed.sort() } });
      }
      if (switched) {
        const action = row.enabled ? 'key.enabled' : 'key.disabled';
        records.push({ key: row, action, actor, origin, details: { enabled: row.enabled } });
      }
      await this.changes.record(manager, records);
      return row;
    });
    // After commit: the new balance is the live one everywhere, then every key cache drops the record.
    if (dto.credits) await this.credits.published(saved.id, creditStateOf(saved));
    this.invalidations.publish({ kind: 'key', keyId: saved.id });
    const [response] = await this.present([saved]);
    return response;
  }

  /** New value now; the old one keeps working for `grace_period_seconds` (default 0: at once). */
  async rotate(
    principal: Principal,
    id: string,
    dto: RotateApiKeyDto,
    origin: RequestOrigin,
  ): Promise<CreatedApiKeyResponse> {
    const key = await this.findManageable(principal, id);
    const status = keyStatus(key);
    if (status !== 'active') {
      throw new ApiKeyError(ApiKeyErrorCode.KeyNotActive, `A ${status} key cannot be rotated.`);
    }
    // A rotation issues a new credential, so it meets the organization's rules as a new key would: a key
    // made before a rule (no expiration, or one too far out) is refused until its expiration is set by
    // PATCH. A rotation policy's own rotations are not refused: they only shorten a value's life.
    await this.policies.assertExpirationAllowed(principal.organizationId, key.expiration);
    const { key: saved, value } = await this.keys.transaction((manager) =>
      this.rotateInTransaction(manager, key, dto.grace_period_seconds ?? 0, actorOf(principal), origin),
    );
    this.invalidations.publish({ kind: 'key', keyId: saved.id });
    const [response] = await this.present([saved]);
    return { ...response, key: value };
  }

  /** Shared by manual rotation and rotation policies. */
  async rotateInTransaction(
    manager: EntityManager,
    key: ApiKey,
    graceSeconds: number,
    actor: ReturnType<typeof actorOf>,
    origin?: RequestOrigin,
  ): Promise<{ key: ApiKey; value: string }> {
    const now = new Date();
    const value = this.values.generate();
    const previousHash = key.keyHash;
    key.keyHash = this.values.hash(value);
    key.start = keyStart(value);
    // The replaced value stays recognizable, so it is refused as revoked (not as unknown) once its
    // grace period ends; with no grace period that is now.
    key.previousKeyHash = previousHash;
    key.previousKeyExpiresAt = new Date(now.getTime() + graceSeconds * 1000);
    key.previousKeyLastUsedAt = null;
    key.lastRotatedAt = now;
    if (key.rotationEnabled && key.rotationDays) {
      key.nextRotationAt = new Date(now.getTime() + key.rotationDays * DAY_MS);
    }
    const saved = await this.keys.save(manager, key);
    await this.changes.record(manager, [
      {
        key: saved,
        action: 'key.rotated',
        actor,
        origin,
        details: {
          automatic: actor.type === 'system',
          grace_period_seconds: graceSeconds,
          previous_key_expires_at: graceSeconds > 0 ? key.previousKeyExpiresAt.toISOString() : null,
        },
        // Only a policy rotation hands the new value to the organization's webhooks; a manual
        // rotation returns it to the caller instead.
        secret: actor.type === 'system' ? value : undefined,
      },
    ]);
    return { key: saved, value };
  }

  async delete(principal: Principal, id: string, origin: RequestOrigin): Promise<void> {
    const key = await this.findManageable(principal, id);
    await this.keys.transaction(async (manager) => {
      await this.keys.markDeleted(manager, key.id);
      await this.changes.record(manager, [
        { key, action: 'key.deleted', actor: actorOf(principal), origin, details: { name: key.name } },
      ]);
    });
    this.invalidations.publish({ kind: 'key', keyId: key.id });
  }

  /** The key must exist in the caller's organization (404 otherwise, never 403). */
  async find(principal: Principal, id: string): Promise<ApiKey> {
    const key = isIdOf(API_KEY_ID, id)
      ? await this.keys.findInOrganization(principal.organizationId, id)
      : null;
    if (!key) throw new ApiKeyError(ApiKeyErrorCode.NotFound, 'The API key was not found.');
    return key;
  }

  /** Names of the organization's keys among `ids` that are not deleted (usage reports name them). */
  async namesOf(principal: Principal, ids: string[]): Promise<Map<string, string>> {
    return this.keys.namesOf(principal.organizationId, ids);
  }

  /** Runs inside the deactivation transaction; the caller publishes the user invalidation after commit. */
  private async revokePersonalKeys(
    manager: EntityManager,
    organizationId: string,
    userId: string,
    actor: ReturnType<typeof actorOf>,
  ): Promise<void> {
    const revoked = await this.keys.lockLivePersonalKeys(manager, organizationId, userId);
    if (!revoked.length) return;
    await this.keys.revoke(
      manager,
      revoked.map((key) => key.id),
      'owner_deactivated',
    );
    await this.changes.record(
      manager,
      revoked.map((key) => ({
        key,
        action: 'key.revoked',
        actor,
        details: { reason: 'owner_deactivated', owner_id: userId },
      })),
    );
  }

  /** Acting on a key whose permissions exceed the caller's (rotating it would hand them its power) is refused. */
  private async findManageable(principal: Principal, id: string): Promise<ApiKey> {
    const key = await this.find(principal, id);
    const [permissions] = await this.effectivePermissions([key]);
    assertWithinPrincipal(principal, permissions, 'The target key');
    return key;
  }

  private async checkTeam(
    principal: Principal,
    type: string,
    teamId: string | undefined,
  ): Promise<string | null> {
    if (type !== 'team') {
      if (teamId)
        throw new ApiKeyError(ApiKeyErrorCode.ValidationFailed, 'team_id applies to team keys only.', {
          errors: [{ field: 'team_id', message: 'team_id is only allowed for team keys' }],
        });
      return null;
    }
    if (!teamId) {
      throw new ApiKeyError(ApiKeyErrorCode.ValidationFailed, 'A team key needs team_id.', {
        errors: [{ field: 'team_id', message: 'team_id is required for team keys' }],
      });
    }
    if (!(await this.teams.exists(principal.organizationId, teamId))) {
      throw new ApiKeyError(ApiKeyErrorCode.UnknownTeam, 'The team does not exist.', {
        errors: [{ field: 'team_id', message: 'team not found' }],
      });
    }
    return teamId;
  }

  /** The identity a key names: one of the caller's organization (400 unknown_identity otherwise), or null. */
  private async checkIdentity(
    principal: Principal,
    identityId: string | null | undefined,
  ): Promise<string | null> {
    if (identityId === null || identityId === undefined) return null;
    return (await this.identities.requireForKey(principal.organizationId, identityId)).id;
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

  /** Key objects: effective permissions, live credit balances and identities, each fetched once for the batch. */
  private async present(keys: ApiKey[]): Promise<ApiKeyResponse[]> {
    const organizationId = keys[0]?.organizationId;
    const identityIds = keys.flatMap((key) => (key.identityId ? [key.identityId] : []));
    const [permissions, balances, identities] = await Promise.all([
      this.effectivePermissions(keys),
      this.credits.balances(keys),
      organizationId && identityIds.length
        ? this.identities.summaries(organizationId, identityIds)
        : new Map<string, never>(),
    ]);
    return keys.map((key, i) =>
      ApiKeyResponse.of(key, permissions[i], {
        creditsRemaining: balances.get(key.id) ?? null,
        identity: (key.identityId && identities.get(key.identityId)) || null,
      }),
    );
  }

  /** Effective permissions of each key, as the key check computes them (one rule: KeyPermissions). */
  private async effectivePermissions(keys: ApiKey[]): Promise<ReadonlySet<Permission>[]> {
    return (await this.grants.of(keys)).map((grant) => grant.permissions);
  }
}

function applyRotationPolicy(key: ApiKey, policy: CreateApiKeyDto['rotation_policy'], now: Date): void {
  key.rotationEnabled = policy?.enabled ?? false;
  key.rotationDays = policy?.days ?? null;
  key.rotationGraceSeconds = policy?.grace_period_seconds ?? 0;
  key.nextRotationAt =
    key.rotationEnabled && key.rotationDays ? new Date(now.getTime() + key.rotationDays * DAY_MS) : null;
}

function applyRateLimit(key: ApiKey, limit: CreateApiKeyDto['rate_limit']): void {
  key.rateLimitPerMinute = limit?.requests_per_minute ?? null;
  key.rateLimitPerHour = limit?.requests_per_hour ?? null;
}
