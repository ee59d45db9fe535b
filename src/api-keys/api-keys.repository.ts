import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, IsNull, Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { CreditBalanceTable } from './credits/credit-balance-table';
import { ApiKey, KeyStatus } from './api-key.entity';
import type { LeakAction, LeakSource } from './api-key-leak.entity';

export interface KeyListFilters {
  type?: ApiKey['type'];
  status?: KeyStatus;
  ownerId?: string;
  teamId?: string;
  identityId?: string;
  /** Name contains it, or `start` begins with it, ignoring case (LIKE wildcards taken literally). */
  search?: string;
  /** Keys that do (true) or do not (false) break the organization's expiration rules as given. */
  violatesPolicy?: {
    violates: boolean;
    requireExpiration: boolean;
    maxKeyLifetimeDays: number | null;
  };
}

/** One report of a key: the key (locked), the URL it was found at ('' for none) and what it did. */
export interface NewKeyLeak {
  keyId: string;
  organizationId: string;
  sourceUrl: string;
  source: LeakSource;
  actionTaken: LeakAction;
}

/**
 * The identity (null: none) of each key among `keys`, by key id, each read in its own organization,
 * deleted keys too (their runs still count under the identity they had): one statement for all of
 * them, in the caller's transaction; a key that is not there is absent. A function of the table rather
 * than an ApiKeysRepository method, so KeyIdentityIds (key-identity-ids.ts) can serve it in the task
 * worker, which registers no ApiKey entity (as refundSettledInTables serves ReservationSettlement).
 */
export async function identityIdsOfKeys(
  manager: EntityManager,
  keys: readonly { organizationId: string; keyId: string }[],
): Promise<Map<string, string | null>> {
  if (!keys.length) return new Map();
  const rows = await manager.query<{ id: string; identity_id: string | null }[]>(
    `SELECT k.id, k.identity_id
       FROM unnest($1::text[], $2::text[]) AS wanted(organization_id, id)
       JOIN api_keys k ON k.id = wanted.id AND k.organization_id = wanted.organization_id`,
    [keys.map((key) => key.organizationId), keys.map((key) => key.keyId)],
  );
  return new Map(rows.map((row) => [row.id, row.identity_id]));
}

/** How many keys one scheduled scan claims at most; the next scan takes the rest. */
const EXPIRY_BATCH = 500;
const ROTATION_BATCH = 100;

/**
 * The api_keys table: every query on it. Scans claim rows with FOR UPDATE SKIP LOCKED inside the
 * caller's transaction, so several instances never act on one key twice.
 */
@Injectable()
export class ApiKeysRepository {
  constructor(@InjectRepository(ApiKey) private readonly keys: Repository<ApiKey>) {}

  /** Runs `work` in one transaction: a key change, its audit entry and its events commit together. */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.keys.manager.transaction(work);
  }

  newKey(fields: Partial<ApiKey>): ApiKey {
    return this.keys.create(fields);
  }

  save(manager: EntityManager, key: ApiKey): Promise<ApiKey> {
    return manager.save(key);
  }

  /** A key of the organization that is not deleted. */
  findInOrganization(organizationId: string, id: string): Promise<ApiKey | null> {
    return this.keys.findOneBy({ id, organizationId, deletedAt: IsNull() });
  }

  /** Names by id of the organization's keys among `ids`, deleted ones left out. */
  async namesOf(organizationId: string, ids: string[]): Promise<Map<string, string>> {
    if (!ids.length) return new Map();
    const keys = await this.keys.find({
      select: { id: true, name: true },
      where: { organizationId, id: In(ids), deletedAt: IsNull() },
    });
    return new Map(keys.map((key) => [key.id, key.name]));
  }

  /** How many keys (not deleted) of the organization name each of `identityIds`. */
  async countByIdentity(
    organizationId: string,
    identityIds: string[],
    manager: EntityManager = this.keys.manager,
  ): Promise<Map<string, number>> {
    const rows = await manager.query<{ identity_id: string; count: string }[]>(
      `SELECT identity_id, count(*) AS count FROM api_keys
        WHERE organization_id = $1 AND identity_id = ANY($2::text[]) AND deleted_at IS NULL
        GROUP BY identity_id`,
      [organizationId, identityIds],
    );
    return new Map(rows.map((row) => [row.identity_id, Number(row.count)]));
  }

  /** The organization's keys among `ids`, deleted ones too, by id: their name, for the audit log. */
  async auditNamesOf(
    organizationId: string,
    ids: string[],
  ): Promise<Map<string, { name: string; deleted: boolean }>> {
    const rows = await this.keys.manager.query<{ id: string; name: string; deleted: boolean }[]>(
      `SELECT id, name, deleted_at IS NOT NULL AS deleted FROM api_keys
        WHERE organization_id = $1 AND id = ANY($2::text[])`,
      [organizationId, ids],
    );
    return new Map(rows.map((row) => [row.id, { name: row.name, deleted: row.deleted }]));
  }

  /** The key whose current or previous (rotated-out) value has this hash, unless deleted. */
  async findByValueHash(hash: string): Promise<{ key: ApiKey; matchedPrevious: boolean } | null> {
    const key = await this.keys
      .createQueryBuilder('key')
      .where('(key.key_hash = :hash OR key.previous_key_hash = :hash)', { hash })
      .andWhere('key.deleted_at IS NULL')
      .limit(1)
      .getOne();
    return key ? { key, matchedPrevious: key.keyHash !== hash } : null;
  }

  page(organizationId: string, filters: KeyListFilters, query: ListQueryDto): Promise<Page<ApiKey>> {
    const builder = this.keys
      .createQueryBuilder('key')
      .where('key.organization_id = :organizationId', { organizationId })
      .andWhere('key.deleted_at IS NULL');
    if (filters.type) builder.andWhere('key.type = :type', { type: filters.type });
    if (filters.ownerId) builder.andWhere('key.owner_id = :ownerId', { ownerId: filters.ownerId });
    if (filters.teamId) builder.andWhere('key.team_id = :teamId', { teamId: filters.teamId });
    if (filters.identityId) {
      builder.andWhere('key.identity_id = :identityId', { identityId: filters.identityId });
    }
    if (filters.search) {
      const literal = escapeLike(filters.search);
      builder.andWhere(
        "(key.name ILIKE :searchAnywhere ESCAPE '\\' OR key.start ILIKE :searchPrefix ESCAPE '\\')",
        { searchAnywhere: `%${literal}%`, searchPrefix: `${literal}%` },
      );
    }
    if (filters.status === 'revoked') builder.andWhere('key.revoked_at IS NOT NULL');
    if (filters.status === 'expired') builder.andWhere('key.revoked_at IS NULL AND key.expiration <= now()');
    if (filters.status === 'disabled') {
      builder.andWhere(
        'key.revoked_at IS NULL AND (key.expiration IS NULL OR key.expiration > now()) AND NOT key.enabled',
      );
    }
    if (filters.status === 'active') {
      builder.andWhere(
        'key.revoked_at IS NULL AND (key.expiration IS NULL OR key.expiration > now()) AND key.enabled',
      );
    }
    if (filters.violatesPolicy) {
      const { violates, requireExpiration, maxKeyLifetimeDays } = filters.violatesPolicy;
      // What the policy would refuse if the expiration were set now; revoked keys break nothing.
      const violating =
        maxKeyLifetimeDays !== null
          ? 'key.revoked_at IS NULL AND (key.expiration IS NULL OR key.expiration > now() + make_interval(days => :maxDays))'
          : requireExpiration
            ? 'key.revoked_at IS NULL AND key.expiration IS NULL'
            : 'false';
      builder.andWhere(violates ? `(${violating})` : `NOT (${violating})`, { maxDays: maxKeyLifetimeDays });
    }
    return paginate(builder, query);
  }

  /**
   * The keys (not deleted) whose current or previous value has one of these hashes, locked in the
   * caller's transaction in id order (two reports naming the same keys never deadlock): one query for a
   * whole report, however many values it holds.
   */
  lockByValueHashes(manager: EntityManager, hashes: string[]): Promise<ApiKey[]> {
    return manager
      .createQueryBuilder(ApiKey, 'key')
      .where('(key.key_hash = ANY(:hashes) OR key.previous_key_hash = ANY(:hashes))', { hashes })
      .andWhere('key.deleted_at IS NULL')
      .orderBy('key.id', 'ASC')
      .setLock('pessimistic_write')
      .getMany();
  }

  /** The (key, source URL) pairs already reported among these keys' (their rows are locked by the caller). */
  async reportedLeaks(manager: EntityManager, keyIds: string[]): Promise<Set<string>> {
    const rows = await manager.query<{ key_id: string; source_url: string }[]>(
      `SELECT key_id, source_url FROM api_key_leaks WHERE key_id = ANY($1::text[])`,
      [keyIds],
    );
    return new Set(rows.map((row) => leakPair(row.key_id, row.source_url)));
  }

  /** Records reports; the first report of a key stamps its `leaked_at`. */
  async insertLeaks(manager: EntityManager, leaks: NewKeyLeak[]): Promise<void> {
    if (!leaks.length) return;
    await manager.query(
      `INSERT INTO api_key_leaks (key_id, source_url, organization_id, source, action_taken)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
       ON CONFLICT (key_id, source_url) DO NOTHING`,
      [
        leaks.map((leak) => leak.keyId),
        leaks.map((leak) => leak.sourceUrl),
        leaks.map((leak) => leak.organizationId),
        leaks.map((leak) => leak.source),
        leaks.map((leak) => leak.actionTaken),
      ],
    );
    await manager.query(
      `UPDATE api_keys SET leaked_at = COALESCE(leaked_at, now()) WHERE id = ANY($1::text[])`,
      [[...new Set(leaks.map((leak) => leak.keyId))]],
    );
  }

  /** Switches keys off (the kill switch, as PATCH `enabled: false`). */
  disable(manager: EntityManager, ids: string[]): Promise<unknown> {
    return manager.update(ApiKey, { id: In(ids) }, { enabled: false });
  }

  markDeleted(manager: EntityManager, id: string): Promise<unknown> {
    return manager.update(ApiKey, { id }, { deletedAt: new Date() });
  }

  /** A user's live personal keys, locked for revocation in the caller's transaction. */
  lockLivePersonalKeys(manager: EntityManager, organizationId: string, ownerId: string): Promise<ApiKey[]> {
    return manager.find(ApiKey, {
      where: { organizationId, ownerId, type: 'personal', revokedAt: IsNull(), deletedAt: IsNull() },
      lock: { mode: 'pessimistic_write' },
    });
  }

  revoke(manager: EntityManager, ids: string[], reason: string): Promise<unknown> {
    return manager.update(ApiKey, { id: In(ids) }, { revokedAt: new Date(), revokedReason: reason });
  }

  /** Whether a live key of the organization holds the role (a role still held cannot be deleted). */
  holdsRole(manager: EntityManager, organizationId: string, role: string): Promise<boolean> {
    return manager.exists(ApiKey, {
      where: { organizationId, role, deletedAt: IsNull(), revokedAt: IsNull() },
    });
  }

  /**
   * Moves `last_used_at` (or the previous value's) forward, never back, with the client address of
   * that use (`last_used_ip` follows the current value only).
   */
  async recordUse(keyId: string, previousValue: boolean, at: Date, ip: string | null): Promise<void> {
    if (previousValue) {
      await this.keys.query(
        `UPDATE api_keys SET previous_key_last_used_at = GREATEST(COALESCE(previous_key_last_used_at, $2), $2) WHERE id = $1`,
        [keyId, at],
      );
      return;
    }
    await this.keys.query(
      `UPDATE api_keys SET last_used_at = $2, last_used_ip = $3 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $2)`,
      [keyId, at, ip],
    );
  }

  // --- Credits (src/api-keys/credits): every balance statement is the shared table class's.

  /** The credit balances of keys (the ledgers spend them; create and PATCH set them). */
  readonly credits = new CreditBalanceTable(() => this.keys.manager, 'api_keys');

  /** Live keys with a refill whose balance stands from before `before` (candidates for the refill scan). */
  async keysWithRefillBefore(before: Date, limit: number): Promise<ApiKey[]> {
    return this.keys
      .createQueryBuilder('key')
      .where('key.credits_refill_interval IS NOT NULL AND key.credits_remaining IS NOT NULL')
      .andWhere('GREATEST(key.credits_refilled_at, key.credits_set_at, key.created_at) < :before', { before })
      .andWhere('key.revoked_at IS NULL AND key.deleted_at IS NULL')
      .limit(limit)
      .getMany();
  }

  /** Live keys expiring within `days` not yet warned about, now marked warned. */
  async claimExpiryWarnings(manager: EntityManager, days: number): Promise<ApiKey[]> {
    const keys = await this.claimLive(
      manager,
      `key.expiry_warned_at IS NULL AND key.expiration > now() AND key.expiration <= now() + make_interval(days => :days)`,
      { days },
    );
    if (keys.length)
      await manager.update(ApiKey, { id: In(keys.map((k) => k.id)) }, { expiryWarnedAt: new Date() });
    return keys;
  }

  /** Live keys past their expiration not yet recorded as expired, now marked recorded. */
  async claimExpired(manager: EntityManager): Promise<ApiKey[]> {
    const keys = await this.claimLive(
      manager,
      'key.expiry_recorded_at IS NULL AND key.expiration <= now()',
      {},
    );
    if (keys.length)
      await manager.update(ApiKey, { id: In(keys.map((k) => k.id)) }, { expiryRecordedAt: new Date() });
    return keys;
  }

  /** Live, unexpired keys whose rotation policy is due. */
  claimDueRotations(manager: EntityManager): Promise<ApiKey[]> {
    return manager
      .createQueryBuilder(ApiKey, 'key')
      .where('key.rotation_enabled AND key.next_rotation_at <= now()')
      .andWhere('key.revoked_at IS NULL AND key.deleted_at IS NULL')
      .andWhere('(key.expiration IS NULL OR key.expiration > now())')
      .orderBy('key.next_rotation_at', 'ASC')
      .limit(ROTATION_BATCH)
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked')
      .getMany();
  }

  private claimLive(manager: EntityManager, condition: string, parameters: Record<string, unknown>) {
    return manager
      .createQueryBuilder(ApiKey, 'key')
      .where(condition, parameters)
      .andWhere('key.revoked_at IS NULL AND key.deleted_at IS NULL')
      .orderBy('key.expiration', 'ASC')
      .limit(EXPIRY_BATCH)
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked')
      .getMany();
  }
}

/** `text` as a LIKE pattern that matches exactly it: its wildcards and the escape character escaped. */
function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (character) => `\\${character}`);
}

/** A (key, source URL) pair as one string, for sets. */
export function leakPair(keyId: string, sourceUrl: string): string {
  return `${keyId} ${sourceUrl}`;
}
