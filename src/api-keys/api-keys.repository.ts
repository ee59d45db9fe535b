import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, IsNull, Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { ApiKey, KeyStatus, RefillInterval } from './api-key.entity';

export interface KeyListFilters {
  type?: ApiKey['type'];
  status?: KeyStatus;
  ownerId?: string;
  teamId?: string;
}

/** A credit balance as stored: what is left, of which amount, in which generation of settings. */
export interface CreditState {
  remaining: number;
  baseline: number;
  generation: number;
}

interface CreditRow {
  credits_remaining: string;
  credits_baseline: string | null;
  credits_generation: number;
}

/** Where claimCredits sent a spend (see there). */
export interface CreditClaim {
  outcome: 'seed' | 'join' | 'row' | 'wait';
  granted: number;
  state: CreditState;
  epoch: number;
  leaseLeftMs: number;
}

interface CreditClaimRow {
  outcome: CreditClaim['outcome'];
  granted: string;
  credits_epoch: number;
  lease_left_ms: string | null;
}

const CREDIT_COLUMNS = 'api_keys.credits_remaining, api_keys.credits_baseline, api_keys.credits_generation';

function creditState(row: CreditRow): CreditState {
  const remaining = Number(row.credits_remaining);
  return {
    remaining,
    baseline: row.credits_baseline === null ? remaining : Number(row.credits_baseline),
    generation: Number(row.credits_generation),
  };
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
    return paginate(builder, query);
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

  // --- Credits (src/api-keys/credits): the database is the balance without Redis, its backing with.

  /**
   * Spends up to `count` credits, never below zero, on the row locked first (so the balance read is
   * the one changed): how many were granted and the balance left, or null when none was left.
   */
  async spendCredits(keyId: string, count: number): Promise<{ granted: number; left: CreditState } | null> {
    const [rows] = await this.keys.query<[(CreditRow & { granted: string })[], number]>(
      `WITH locked AS (
         SELECT id, credits_remaining AS before FROM api_keys WHERE id = $1 AND credits_remaining > 0 FOR UPDATE
       )
       UPDATE api_keys SET credits_remaining = api_keys.credits_remaining - LEAST($2::bigint, locked.before)
         FROM locked WHERE api_keys.id = locked.id
         RETURNING LEAST($2::bigint, locked.before) AS granted, ${CREDIT_COLUMNS}`,
      [keyId, count],
    );
    return rows.length ? { granted: Number(rows[0].granted), left: creditState(rows[0]) } : null;
  }

  /**
   * Sets (or with null removes) the balance and its refill, as a new generation: a top-up replaces
   * whatever is left, and spends of the old generation are not written back over it.
   */
  async setCredits(
    manager: EntityManager,
    keyId: string,
    credits: { remaining: number; refill?: { interval: RefillInterval; amount: number } | null } | null,
    at: Date,
  ): Promise<number> {
    const [rows] = await manager.query<[{ credits_generation: number }[], number]>(
      `UPDATE api_keys
          SET credits_remaining = $2::bigint, credits_baseline = $2::bigint, credits_refill_interval = $3,
              credits_refill_amount = $4, credits_set_at = $5,
              credits_refilled_at = CASE WHEN $2::bigint IS NULL THEN NULL ELSE credits_refilled_at END,
              credits_generation = credits_generation + 1
        WHERE id = $1
        RETURNING credits_generation`,
      [
        keyId,
        credits?.remaining ?? null,
        credits?.refill?.interval ?? null,
        credits?.refill?.amount ?? null,
        credits ? at : null,
      ],
    );
    return Number(rows[0].credits_generation);
  }

  /**
   * Spends exactly `count` credits or none (a task's reservation), on the row: the balance left, or null
   * when fewer were left.
   */
  async spendExactCredits(keyId: string, count: number): Promise<CreditState | null> {
    const [rows] = await this.keys.query<[CreditRow[], number]>(
      `UPDATE api_keys SET credits_remaining = credits_remaining - $2::bigint
        WHERE id = $1 AND credits_remaining >= $2::bigint
        RETURNING ${CREDIT_COLUMNS}`,
      [keyId, count],
    );
    return rows.length ? creditState(rows[0]) : null;
  }

  /** Gives back credits spent by a request refused later in the key check (same generation only). */
  async refundCredit(keyId: string, generation: number, count = 1): Promise<void> {
    await this.keys.query(
      `UPDATE api_keys SET credits_remaining = credits_remaining + $3::bigint
        WHERE id = $1 AND credits_generation = $2`,
      [keyId, generation, count],
    );
  }

  /** The balance as the database holds it now (null: unlimited or no such key). */
  async readCredits(keyId: string): Promise<CreditState | null> {
    const rows = await this.keys.query<CreditRow[]>(
      `SELECT ${CREDIT_COLUMNS} FROM api_keys WHERE id = $1 AND credits_remaining IS NOT NULL`,
      [keyId],
    );
    return rows.length ? creditState(rows[0]) : null;
  }

  /**
   * Refills the balance for `boundary` unless that refill (or a later setting) already happened: one
   * conditional UPDATE, so of several instances racing at midnight exactly one refills.
   */
  async refillCredits(keyId: string, boundary: Date): Promise<CreditState | null> {
    const [rows] = await this.keys.query<[CreditRow[], number]>(
      `UPDATE api_keys
          SET credits_remaining = credits_refill_amount, credits_baseline = credits_refill_amount,
              credits_refilled_at = $2, credits_generation = credits_generation + 1
        WHERE id = $1 AND credits_remaining IS NOT NULL AND credits_refill_amount IS NOT NULL
          AND (credits_refilled_at IS NULL OR credits_refilled_at < $2)
          AND (credits_set_at IS NULL OR credits_set_at < $2)
        RETURNING ${CREDIT_COLUMNS}`,
      [keyId, boundary],
    );
    return rows.length ? creditState(rows[0]) : null;
  }

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

  /**
   * With Redis (redis-credit-ledger.ts, where the protocol is described): decides under the row's lock
   * where `count` credits are spent. `join`: Redis holds the row's current epoch (`redisEpoch`, as
   * Redis reported it), nobody spent the row since, and the lease is extended; `seed`: Redis may spend
   * a new epoch of the balance, seeded from the row as returned, until the lease ends; `wait`: Redis's
   * lease has `leaseLeftMs` to run and the row must not be spent before; `row`: the row is the balance,
   * and `granted` of them were spent here. `redisFailed` (this instance could not reach Redis) stops
   * every renewal of the lease, and keeps the balance in the row for `holdMs` after it ran out.
   */
  async claimCredits(
    keyId: string,
    claim: {
      count: number;
      redisFailed: boolean;
      redisEpoch: number;
      leaseMs: number;
      holdMs: number;
      /** All `count` or none (a task's reservation); otherwise as many as are left. */
      exact?: boolean;
    },
  ): Promise<CreditClaim | null> {
    const [rows] = await this.keys.query<[(CreditRow & CreditClaimRow)[], number]>(
      `WITH locked AS (
         SELECT id, credits_remaining AS remaining, credits_epoch AS epoch,
                credits_lease_until IS NOT NULL AS redis_epoch,
                COALESCE(credits_lease_until > now(), false) AS leased,
                $3::boolean OR COALESCE(credits_hold_until > now(), false) AS held
           FROM api_keys WHERE id = $1 AND credits_remaining IS NOT NULL FOR UPDATE
       ), decided AS (
         SELECT locked.*,
                CASE WHEN redis_epoch AND NOT held AND epoch = $4 THEN 'join'
                     WHEN leased THEN 'wait'
                     WHEN held THEN 'row'
                     ELSE 'seed' END AS outcome
           FROM locked
       ), claimed AS (
         SELECT decided.*,
                CASE WHEN outcome = 'row' AND NOT ($7::boolean AND remaining < $2::bigint)
                     THEN LEAST($2::bigint, remaining) ELSE 0 END AS granted
           FROM decided
       )
       UPDATE api_keys
          SET credits_remaining = api_keys.credits_remaining - claimed.granted,
              credits_epoch = CASE WHEN outcome = 'seed' OR (outcome = 'row' AND redis_epoch)
                                   THEN claimed.epoch + 1 ELSE claimed.epoch END,
              credits_lease_until = CASE outcome
                                      WHEN 'seed' THEN now() + make_interval(secs => $5::float8 / 1000)
                                      WHEN 'join' THEN GREATEST(api_keys.credits_lease_until,
                                                                now() + make_interval(secs => $5::float8 / 1000))
                                      WHEN 'row' THEN NULL
                                      ELSE api_keys.credits_lease_until END,
              credits_hold_until = CASE WHEN $3::boolean
                                        THEN GREATEST(api_keys.credits_lease_until,
                                                      now() + make_interval(secs => $6::float8 / 1000))
                                        ELSE api_keys.credits_hold_until END
         FROM claimed WHERE api_keys.id = claimed.id
         RETURNING claimed.outcome, claimed.granted, ${CREDIT_COLUMNS}, api_keys.credits_epoch,
                   GREATEST(0, CEIL(EXTRACT(EPOCH FROM api_keys.credits_lease_until - now()) * 1000))
                     AS lease_left_ms`,
      [
        keyId,
        claim.count,
        claim.redisFailed,
        claim.redisEpoch,
        claim.leaseMs,
        claim.holdMs,
        claim.exact ?? false,
      ],
    );
    if (!rows.length) return null;
    const row = rows[0];
    return {
      outcome: row.outcome,
      granted: Number(row.granted),
      state: creditState(row),
      epoch: Number(row.credits_epoch),
      leaseLeftMs: Number(row.lease_left_ms ?? 0),
    };
  }

  /**
   * Writes balances spent in Redis back to the row: only within the same generation and epoch and only
   * downwards, so instances writing in any order leave the lowest, and a newer setting or a hand-over
   * is never undone. Each also extends the epoch's lease by `leaseMs`, unless an instance that could
   * not reach Redis holds the balance in the row: the keys whose lease was extended are returned.
   */
  async writeBackCredits(
    balances: { keyId: string; generation: number; epoch: number; remaining: number }[],
    leaseMs: number,
  ): Promise<Set<string>> {
    if (!balances.length) return new Set();
    const [rows] = await this.keys.query<[{ id: string; renewed: boolean }[], number]>(
      `UPDATE api_keys AS key
          SET credits_remaining = LEAST(key.credits_remaining, spent.remaining),
              credits_lease_until = CASE WHEN key.credits_hold_until > now() THEN key.credits_lease_until
                                         ELSE GREATEST(key.credits_lease_until,
                                                       now() + make_interval(secs => $5::float8 / 1000)) END
         FROM unnest($1::text[], $2::int[], $3::int[], $4::bigint[]) AS spent(id, generation, epoch, remaining)
        WHERE key.id = spent.id AND key.credits_generation = spent.generation
          AND key.credits_epoch = spent.epoch AND key.credits_lease_until IS NOT NULL
        RETURNING key.id, COALESCE(key.credits_hold_until <= now(), true) AS renewed`,
      [
        balances.map((b) => b.keyId),
        balances.map((b) => b.generation),
        balances.map((b) => b.epoch),
        balances.map((b) => b.remaining),
        leaseMs,
      ],
    );
    return new Set(rows.filter((row) => row.renewed).map((row) => row.id));
  }

  /** Gives back a credit spent on the row under claimCredits, while the row is still that balance. */
  async refundClaimedCredit(keyId: string, generation: number, epoch: number, count = 1): Promise<void> {
    await this.keys.query(
      `UPDATE api_keys SET credits_remaining = credits_remaining + $4::bigint
        WHERE id = $1 AND credits_generation = $2 AND credits_epoch = $3 AND credits_lease_until IS NULL`,
      [keyId, generation, epoch, count],
    );
  }

  /**
   * Marks `key.credits_low` sent for this generation; false when it already was (or the balance was
   * set again meanwhile), so the event is recorded once whichever instance saw the crossing.
   */
  async claimCreditsLow(manager: EntityManager, keyId: string, generation: number): Promise<boolean> {
    const [rows] = await manager.query<[unknown[], number]>(
      `UPDATE api_keys SET credits_low_generation = $2
        WHERE id = $1 AND credits_generation = $2 AND credits_low_generation IS DISTINCT FROM $2
        RETURNING id`,
      [keyId, generation],
    );
    return rows.length > 0;
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
