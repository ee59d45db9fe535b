import { Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, In, IsNull, Repository } from 'typeorm';
import { Team } from '../accounts/team.entity';
import { User } from '../accounts/user.entity';
import { UserLifecycle } from '../accounts/user-lifecycle';
import { actorOf, RequestOrigin } from '../audit/audit.service';
import type { Principal } from '../auth/principal';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { isIdOf, newId } from '../common/ids';
import { Page, paginate } from '../common/pagination';
import { badRequest, conflict, notFound } from '../common/problem';
import { assertWithinPrincipal } from '../roles/escalation';
import { intersectPermissions, Permission } from '../roles/permissions';
import { RolesService } from '../roles/roles.service';
import { keyStart } from './api-key-format';
import { ApiKeyAuthenticator } from './api-key.authenticator';
import { ApiKey, keyStatus } from './api-key.entity';
import { KeyChangeRecorder } from './key-change-recorder';
import { CreateApiKeyDto, ListApiKeysQueryDto, RotateApiKeyDto, UpdateApiKeyDto } from './dto/api-key.dto';
import { ApiKeyResponse, CreatedApiKeyResponse } from './dto/api-key-response.dto';

const DAY_MS = 86_400_000;

/**
 * The key lifecycle: create, read, update, rotate, delete, and revocation when a personal key's owner
 * is deactivated. Every change commits together with its audit entry, then tells every key cache.
 */
@Injectable()
export class ApiKeysService {
  constructor(
    @InjectRepository(ApiKey) private readonly keys: Repository<ApiKey>,
    @InjectRepository(User) private readonly users: Repository<User>,
    @InjectRepository(Team) private readonly teams: Repository<Team>,
    private readonly dataSource: DataSource,
    private readonly roles: RolesService,
    private readonly changes: KeyChangeRecorder,
    private readonly invalidations: InvalidationBus,
    private readonly authenticator: ApiKeyAuthenticator,
    @Inject(UserLifecycle) lifecycle: UserLifecycle,
  ) {
    lifecycle.onDeactivated((event, manager) =>
      this.revokePersonalKeys(manager, event.organizationId, event.userId, actorOf(event.actor)),
    );
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
      throw badRequest(
        'owner_required',
        'A personal key needs a user to act for; use a team or service key.',
        [{ field: 'type', message: 'personal keys can only be created by a user or a personal key' }],
      );
    }
    const teamId = await this.checkTeam(principal, type, dto.team_id);

    const value = this.authenticator.format.generate();
    const now = new Date();
    const key = this.keys.create({
      id: newId('apiKey'),
      organizationId: principal.organizationId,
      name: dto.name,
      description: dto.description ?? null,
      role: dto.role,
      type,
      ownerId: principal.userId,
      teamId,
      keyHash: this.authenticator.hash(value),
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
    });
    applyRotationPolicy(key, dto.rotation_policy, now);
    applyRateLimit(key, dto.rate_limit);

    const saved = await this.dataSource.transaction(async (manager) => {
      const row = await manager.save(key);
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
    const [permissions] = await this.effectivePermissions([saved]);
    return { ...ApiKeyResponse.of(saved, permissions), key: value };
  }

  async list(principal: Principal, query: ListApiKeysQueryDto): Promise<Page<ApiKeyResponse>> {
    const builder = this.keys
      .createQueryBuilder('key')
      .where('key.organization_id = :organizationId', { organizationId: principal.organizationId })
      .andWhere('key.deleted_at IS NULL');
    if (query.type) builder.andWhere('key.type = :type', { type: query.type });
    if (query.owner_id) builder.andWhere('key.owner_id = :ownerId', { ownerId: query.owner_id });
    if (query.team_id) builder.andWhere('key.team_id = :teamId', { teamId: query.team_id });
    if (query.status === 'revoked') builder.andWhere('key.revoked_at IS NOT NULL');
    if (query.status === 'expired') {
      builder.andWhere('key.revoked_at IS NULL AND key.expiration <= now()');
    }
    if (query.status === 'active') {
      builder.andWhere('key.revoked_at IS NULL AND (key.expiration IS NULL OR key.expiration > now())');
    }
    const page = await paginate(builder, query);
    const permissions = await this.effectivePermissions(page.data);
    return {
      data: page.data.map((key, i) => ApiKeyResponse.of(key, permissions[i])),
      next_cursor: page.next_cursor,
    };
  }

  async get(principal: Principal, id: string): Promise<ApiKeyResponse> {
    const key = await this.find(principal, id);
    const [permissions] = await this.effectivePermissions([key]);
    return ApiKeyResponse.of(key, permissions);
  }

  async update(
    principal: Principal,
    id: string,
    dto: UpdateApiKeyDto,
    origin: RequestOrigin,
  ): Promise<ApiKeyResponse> {
    const key = await this.findManageable(principal, id);
    if (key.revokedAt) throw conflict('key_revoked', 'A revoked key cannot be changed.');
    const changed: string[] = Object.keys(dto).filter(
      (field) => (dto as Record<string, unknown>)[field] !== undefined,
    );

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
      key.expiration = dto.expiration ? new Date(dto.expiration) : null;
      key.expiryRecordedAt = null;
      key.expiryWarnedAt = null;
    }
    if (dto.rotation_policy !== undefined) applyRotationPolicy(key, dto.rotation_policy, new Date());
    if (dto.rate_limit !== undefined) applyRateLimit(key, dto.rate_limit);
    if (dto.allowed_referrers !== undefined) key.allowedReferrers = dto.allowed_referrers;
    if (dto.allowed_ips !== undefined) key.allowedIps = dto.allowed_ips;
    if (dto.hide_credentials !== undefined) key.hideCredentials = dto.hide_credentials;

    const saved = await this.dataSource.transaction(async (manager) => {
      const row = await manager.save(key);
      await this.changes.record(manager, [
        {
          key: row,
          action: 'key.updated',
          actor: actorOf(principal),
          origin,
          details: { fields: changed.sort() },
        },
      ]);
      return row;
    });
    this.invalidations.publish({ kind: 'key', keyId: saved.id });
    const [permissions] = await this.effectivePermissions([saved]);
    return ApiKeyResponse.of(saved, permissions);
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
    if (status !== 'active') throw conflict(`key_${status}`, `A ${status} key cannot be rotated.`);
    const { key: saved, value } = await this.dataSource.transaction((manager) =>
      this.rotateInTransaction(manager, key, dto.grace_period_seconds ?? 0, actorOf(principal), origin),
    );
    this.invalidations.publish({ kind: 'key', keyId: saved.id });
    const [permissions] = await this.effectivePermissions([saved]);
    return { ...ApiKeyResponse.of(saved, permissions), key: value };
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
    const value = this.authenticator.format.generate();
    const previousHash = key.keyHash;
    key.keyHash = this.authenticator.hash(value);
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
    const saved = await manager.save(key);
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
    await this.dataSource.transaction(async (manager) => {
      await manager.update(ApiKey, { id: key.id }, { deletedAt: new Date() });
      await this.changes.record(manager, [
        { key, action: 'key.deleted', actor: actorOf(principal), origin, details: { name: key.name } },
      ]);
    });
    this.invalidations.publish({ kind: 'key', keyId: key.id });
  }

  /** The key must exist in the caller's organization (404 otherwise, never 403). */
  async find(principal: Principal, id: string): Promise<ApiKey> {
    const key = isIdOf('apiKey', id)
      ? await this.keys.findOneBy({ id, organizationId: principal.organizationId, deletedAt: IsNull() })
      : null;
    if (!key) throw notFound('The API key');
    return key;
  }

  /** Runs inside the deactivation transaction; the caller publishes the user invalidation after commit. */
  private async revokePersonalKeys(
    manager: EntityManager,
    organizationId: string,
    userId: string,
    actor: ReturnType<typeof actorOf>,
  ): Promise<void> {
    const revoked = await manager.find(ApiKey, {
      where: { organizationId, ownerId: userId, type: 'personal', revokedAt: IsNull(), deletedAt: IsNull() },
      lock: { mode: 'pessimistic_write' },
    });
    if (!revoked.length) return;
    await manager.update(
      ApiKey,
      { id: In(revoked.map((key) => key.id)) },
      {
        revokedAt: new Date(),
        revokedReason: 'owner_deactivated',
      },
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
        throw badRequest('validation_failed', 'team_id applies to team keys only.', [
          { field: 'team_id', message: 'team_id is only allowed for team keys' },
        ]);
      return null;
    }
    if (!teamId) {
      throw badRequest('validation_failed', 'A team key needs team_id.', [
        { field: 'team_id', message: 'team_id is required for team keys' },
      ]);
    }
    const team = await this.teams.findOneBy({ id: teamId, organizationId: principal.organizationId });
    if (!team) {
      throw badRequest('unknown_team', 'The team does not exist.', [
        { field: 'team_id', message: 'team not found' },
      ]);
    }
    return team.id;
  }

  /** Effective permissions of each key, as the guard computes them: role, narrowed by the owner for personal keys. */
  private async effectivePermissions(keys: ApiKey[]): Promise<ReadonlySet<Permission>[]> {
    const roleCache = new Map<string, Promise<ReadonlySet<Permission>>>();
    const roleOf = (organizationId: string, role: string): Promise<ReadonlySet<Permission>> => {
      const id = `${organizationId}:${role}`;
      if (!roleCache.has(id)) {
        roleCache.set(
          id,
          this.roles.permissionsOf(organizationId, role).then((p) => p ?? new Set<Permission>()),
        );
      }
      return roleCache.get(id)!;
    };
    const ownerIds = [
      ...new Set(keys.filter((k) => k.type === 'personal' && k.ownerId).map((k) => k.ownerId!)),
    ];
    const owners = ownerIds.length ? await this.users.findBy({ id: In(ownerIds) }) : [];
    const ownerById = new Map(owners.map((owner) => [owner.id, owner]));
    return Promise.all(
      keys.map(async (key) => {
        const granted = await roleOf(key.organizationId, key.role);
        if (key.type !== 'personal') return granted;
        const owner = key.ownerId ? ownerById.get(key.ownerId) : undefined;
        if (!owner || !owner.active) return new Set<Permission>();
        return intersectPermissions(granted, await roleOf(owner.organizationId, owner.role));
      }),
    );
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
