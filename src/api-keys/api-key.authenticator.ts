import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { PresentedCredential } from '../auth/presented-credential';
import type { Principal } from '../auth/principal';
import { unauthorized } from '../common/problem';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { BUILT_IN_ROLES, intersectPermissions, isBuiltInRole, Permission } from '../roles/permissions';
import { ApiKeyFormat, ApiKeyHasher } from './api-key-format';
import { ApiKey, keyStatus } from './api-key.entity';
import { KeyCache, ResolvedKey } from './key-cache';
import { KeyUsageRecorder } from './key-usage-recorder';

interface KeyRow {
  matched_previous: boolean;
  role_permissions: Permission[] | null;
  owner_active: boolean | null;
  owner_role: string | null;
  owner_role_permissions: Permission[] | null;
}

function rolePermissions(
  role: string | null,
  customPermissions: Permission[] | null,
): ReadonlySet<Permission> {
  if (role && isBuiltInRole(role)) return BUILT_IN_ROLES[role];
  return new Set(customPermissions ?? []);
}

// Principals of cached key records, per channel the key came through. A key record is replaced, not
// changed, when the key changes, so a Principal built once serves every request of that record.
const principals = new WeakMap<ResolvedKey, Partial<Record<PresentedCredential['via'], Principal>>>();

/** The (frozen, shared) Principal of a key record presented through `via`. */
function principalFor(resolved: ResolvedKey, via: PresentedCredential['via']): Principal {
  let byChannel = principals.get(resolved);
  if (!byChannel) principals.set(resolved, (byChannel = {}));
  const known = byChannel[via];
  if (known) return known;
  const { key } = resolved;
  const principal: Principal = Object.freeze({
    kind: 'api_key',
    organizationId: key.organizationId,
    userId: key.type === 'personal' ? key.ownerId : null,
    apiKeyId: key.id,
    role: key.role,
    permissions: resolved.permissions,
    key: Object.freeze({
      id: key.id,
      name: key.name,
      type: key.type,
      expiresAt: key.expiration,
      presentedVia: via,
      hideCredentials: key.hideCredentials,
      allowedIps: key.allowedIps,
      allowedReferrers: key.allowedReferrers,
      rateLimit: Object.freeze({ perMinute: key.rateLimitPerMinute, perHour: key.rateLimitPerHour }),
    }),
  });
  byChannel[via] = principal;
  return principal;
}

/**
 * API key to Principal. In order: shape and checksum (no database), then the cache, then one indexed
 * query that brings the key, its role and, for a personal key, its owner's state and role. Then the
 * checks that depend on the clock: expiry and the end of a rotation's grace period.
 */
@Injectable()
export class ApiKeyAuthenticator {
  readonly format: ApiKeyFormat;
  private readonly hasher: ApiKeyHasher;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly cache: KeyCache,
    private readonly usage: KeyUsageRecorder,
  ) {
    this.format = new ApiKeyFormat(config.API_KEY_PREFIX);
    this.hasher = new ApiKeyHasher(config.API_KEY_HASH_SECRET);
  }

  /**
   * Synchronous when the key is cached (the common case: no promise on the hot path), a promise when
   * it has to be read. Refusals are thrown either way.
   */
  authenticate(credential: PresentedCredential): Principal | Promise<Principal> {
    if (!this.format.isWellFormed(credential.value)) {
      throw unauthorized('malformed_key', 'The API key is malformed (wrong shape or checksum).');
    }
    const hash = this.hasher.hash(credential.value);
    const cached = this.cache.get(hash);
    if (cached !== undefined) return this.admit(cached, credential);
    const epoch = this.cache.currentEpoch;
    return this.load(hash).then((resolved) => {
      this.cache.set(hash, resolved, epoch);
      return this.admit(resolved, credential);
    });
  }

  /** The checks that depend on the clock and the owner, then the Principal. */
  private admit(resolved: ResolvedKey | null, credential: PresentedCredential): Principal {
    if (!resolved) throw unauthorized('invalid_credentials', 'The API key is not valid.');

    const { key } = resolved;
    const now = new Date();
    const status = keyStatus(key, now);
    if (status === 'revoked' || resolved.ownerActive === false) {
      throw unauthorized('key_revoked', 'The API key has been revoked.');
    }
    if (status === 'expired') throw unauthorized('key_expired', 'The API key has expired.');
    if (resolved.matchedPrevious && !(key.previousKeyExpiresAt && key.previousKeyExpiresAt > now)) {
      throw unauthorized(
        'key_revoked',
        'This key value was replaced by a rotation and its grace period has ended.',
      );
    }

    this.usage.markUsed(key.id, resolved.matchedPrevious);
    return principalFor(resolved, credential.via);
  }

  hash(value: string): string {
    return this.hasher.hash(value);
  }

  private async load(hash: string): Promise<ResolvedKey | null> {
    const { entities, raw } = await this.dataSource
      .getRepository(ApiKey)
      .createQueryBuilder('key')
      .leftJoin(
        'custom_roles',
        'role',
        'role.organization_id = key.organization_id AND role.role_name = key.role',
      )
      .leftJoin('users', 'owner', "key.type = 'personal' AND owner.id = key.owner_id")
      .leftJoin(
        'custom_roles',
        'owner_role',
        'owner_role.organization_id = owner.organization_id AND owner_role.role_name = owner.role',
      )
      .addSelect('(key.previous_key_hash IS NOT DISTINCT FROM :hash)', 'matched_previous')
      .addSelect('role.permissions', 'role_permissions')
      .addSelect('owner.active', 'owner_active')
      .addSelect('owner.role', 'owner_role')
      .addSelect('owner_role.permissions', 'owner_role_permissions')
      .where('(key.key_hash = :hash OR key.previous_key_hash = :hash)', { hash })
      .andWhere('key.deleted_at IS NULL')
      .limit(1)
      .getRawAndEntities<KeyRow>();
    const key = entities[0];
    const row = raw[0];
    if (!key || !row) return null;

    let permissions = rolePermissions(key.role, row.role_permissions);
    if (key.type === 'personal') {
      // A personal key never exceeds its owner, as the owner is now.
      permissions = intersectPermissions(
        permissions,
        rolePermissions(row.owner_role, row.owner_role_permissions),
      );
    }
    return {
      key,
      matchedPrevious: row.matched_previous === true,
      permissions,
      ownerActive: key.type === 'personal' ? row.owner_active === true : null,
    };
  }
}
