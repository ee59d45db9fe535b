import type { EntityManager } from 'typeorm';
import type { RefillInterval } from '../../common/usage-controls.dto';

/** A credit balance as stored: what is left, of which amount, in which generation of settings. */
export interface CreditState {
  remaining: number;
  baseline: number;
  generation: number;
}

/** Where claim() sent a spend (see there). */
export interface CreditClaim {
  outcome: 'seed' | 'join' | 'row' | 'wait';
  granted: number;
  state: CreditState;
  epoch: number;
  leaseLeftMs: number;
}

/** A balance spent in Redis, written back to its row. */
export interface CreditWriteBack {
  keyId: string;
  generation: number;
  epoch: number;
  remaining: number;
}

/** A balance and its refill as create or PATCH sets it (null: no balance). */
export type CreditSetting = {
  remaining: number;
  refill?: { interval: RefillInterval; amount: number } | null;
} | null;

/**
 * The tables whose rows hold a credit balance, all with the same credit columns: `credits_remaining`,
 * `credits_baseline`, `credits_generation`, `credits_refill_*`, `credits_set_at`, `credits_refilled_at`,
 * `credits_low_generation`, and the Redis ledger's `credits_epoch`, `credits_lease_until` and
 * `credits_hold_until` (migrations KeyControlsCreditsUsage, CreditLeases, IdentityCredits). A closed
 * list: the name is written into SQL.
 */
export type CreditTableName = 'api_keys' | 'identities';

interface CreditRow {
  credits_remaining: string;
  credits_baseline: string | null;
  credits_generation: number;
}

interface CreditClaimRow {
  outcome: CreditClaim['outcome'];
  granted: string;
  credits_epoch: number;
  lease_left_ms: string | null;
}

const CREDIT_COLUMNS = 'credits_remaining, credits_baseline, credits_generation';

function creditState(row: CreditRow): CreditState {
  const remaining = Number(row.credits_remaining);
  return {
    remaining,
    baseline: row.credits_baseline === null ? remaining : Number(row.credits_baseline),
    generation: Number(row.credits_generation),
  };
}

/**
 * Every credit statement on one table of balances: the database is the balance without Redis, its
 * backing with (the ledgers beside this file describe the protocol). A key's balance and an identity's
 * are the same thing kept in different tables, so each owning module's repository holds one of these for
 * its own table and the ledgers spend either through it alike. It lives with the credits code, not in
 * common/: it is that code's SQL, and the base layer knows no feature's tables.
 */
export class CreditBalanceTable {
  constructor(
    private readonly manager: () => EntityManager,
    readonly table: CreditTableName,
  ) {}

  /**
   * Spends up to `count` credits, never below zero, on the row locked first (so the balance read is
   * the one changed): how many were granted and the balance left, or null when none was left.
   */
  async spend(id: string, count: number): Promise<{ granted: number; left: CreditState } | null> {
    const t = this.table;
    const [rows] = await this.manager().query<[(CreditRow & { granted: string })[], number]>(
      `WITH locked AS (
         SELECT id, credits_remaining AS before FROM ${t} WHERE id = $1 AND credits_remaining > 0 FOR UPDATE
       )
       UPDATE ${t} SET credits_remaining = ${t}.credits_remaining - LEAST($2::bigint, locked.before)
         FROM locked WHERE ${t}.id = locked.id
         RETURNING LEAST($2::bigint, locked.before) AS granted, ${this.columns()}`,
      [id, count],
    );
    return rows.length ? { granted: Number(rows[0].granted), left: creditState(rows[0]) } : null;
  }

  /**
   * Sets (or with null removes) the balance and its refill, as a new generation: a top-up replaces
   * whatever is left, and spends of the old generation are not written back over it.
   */
  async set(manager: EntityManager, id: string, credits: CreditSetting, at: Date): Promise<number> {
    const [rows] = await manager.query<[{ credits_generation: number }[], number]>(
      `UPDATE ${this.table}
          SET credits_remaining = $2::bigint, credits_baseline = $2::bigint, credits_refill_interval = $3,
              credits_refill_amount = $4, credits_set_at = $5,
              credits_refilled_at = CASE WHEN $2::bigint IS NULL THEN NULL ELSE credits_refilled_at END,
              credits_generation = credits_generation + 1
        WHERE id = $1
        RETURNING credits_generation`,
      [
        id,
        credits?.remaining ?? null,
        credits?.refill?.interval ?? null,
        credits?.refill?.amount ?? null,
        credits ? at : null,
      ],
    );
    return Number(rows[0].credits_generation);
  }

  /** Spends exactly `count` credits or none, on the row: the balance left, or null when fewer were left. */
  async spendExact(id: string, count: number): Promise<CreditState | null> {
    const [rows] = await this.manager().query<[CreditRow[], number]>(
      `UPDATE ${this.table} SET credits_remaining = credits_remaining - $2::bigint
        WHERE id = $1 AND credits_remaining >= $2::bigint
        RETURNING ${CREDIT_COLUMNS}`,
      [id, count],
    );
    return rows.length ? creditState(rows[0]) : null;
  }

  /** Gives back credits spent by a request refused later in the key check (same generation only). */
  async refund(id: string, generation: number, count = 1): Promise<void> {
    await this.manager().query(
      `UPDATE ${this.table} SET credits_remaining = credits_remaining + $3::bigint
        WHERE id = $1 AND credits_generation = $2`,
      [id, generation, count],
    );
  }

  /** The balance as the database holds it now (null: unlimited or no such row). */
  async read(id: string): Promise<CreditState | null> {
    const rows = await this.manager().query<CreditRow[]>(
      `SELECT ${CREDIT_COLUMNS} FROM ${this.table} WHERE id = $1 AND credits_remaining IS NOT NULL`,
      [id],
    );
    return rows.length ? creditState(rows[0]) : null;
  }

  /**
   * Refills the balance for `boundary` unless that refill (or a later setting) already happened: one
   * conditional UPDATE, so of several instances racing at midnight exactly one refills.
   */
  async refill(id: string, boundary: Date): Promise<CreditState | null> {
    const [rows] = await this.manager().query<[CreditRow[], number]>(
      `UPDATE ${this.table}
          SET credits_remaining = credits_refill_amount, credits_baseline = credits_refill_amount,
              credits_refilled_at = $2, credits_generation = credits_generation + 1
        WHERE id = $1 AND credits_remaining IS NOT NULL AND credits_refill_amount IS NOT NULL
          AND (credits_refilled_at IS NULL OR credits_refilled_at < $2)
          AND (credits_set_at IS NULL OR credits_set_at < $2)
        RETURNING ${CREDIT_COLUMNS}`,
      [id, boundary],
    );
    return rows.length ? creditState(rows[0]) : null;
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
  async claim(
    id: string,
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
    const t = this.table;
    const [rows] = await this.manager().query<[(CreditRow & CreditClaimRow)[], number]>(
      `WITH locked AS (
         SELECT id, credits_remaining AS remaining, credits_epoch AS epoch,
                credits_lease_until IS NOT NULL AS redis_epoch,
                COALESCE(credits_lease_until > now(), false) AS leased,
                $3::boolean OR COALESCE(credits_hold_until > now(), false) AS held
           FROM ${t} WHERE id = $1 AND credits_remaining IS NOT NULL FOR UPDATE
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
       UPDATE ${t}
          SET credits_remaining = ${t}.credits_remaining - claimed.granted,
              credits_epoch = CASE WHEN outcome = 'seed' OR (outcome = 'row' AND redis_epoch)
                                   THEN claimed.epoch + 1 ELSE claimed.epoch END,
              credits_lease_until = CASE outcome
                                      WHEN 'seed' THEN now() + make_interval(secs => $5::float8 / 1000)
                                      WHEN 'join' THEN GREATEST(${t}.credits_lease_until,
                                                                now() + make_interval(secs => $5::float8 / 1000))
                                      WHEN 'row' THEN NULL
                                      ELSE ${t}.credits_lease_until END,
              credits_hold_until = CASE WHEN $3::boolean
                                        THEN GREATEST(${t}.credits_lease_until,
                                                      now() + make_interval(secs => $6::float8 / 1000))
                                        ELSE ${t}.credits_hold_until END
         FROM claimed WHERE ${t}.id = claimed.id
         RETURNING claimed.outcome, claimed.granted, ${this.columns()}, ${t}.credits_epoch,
                   GREATEST(0, CEIL(EXTRACT(EPOCH FROM ${t}.credits_lease_until - now()) * 1000))
                     AS lease_left_ms`,
      [
        id,
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
   * Writes balances spent in Redis back to the rows: only within the same generation and epoch and only
   * downwards, so instances writing in any order leave the lowest, and a newer setting or a hand-over
   * is never undone. Each also extends the epoch's lease by `leaseMs`, unless an instance that could
   * not reach Redis holds the balance in the row: the ids whose lease was extended are returned.
   */
  async writeBack(balances: readonly CreditWriteBack[], leaseMs: number): Promise<Set<string>> {
    if (!balances.length) return new Set();
    const [rows] = await this.manager().query<[{ id: string; renewed: boolean }[], number]>(
      `UPDATE ${this.table} AS held
          SET credits_remaining = LEAST(held.credits_remaining, spent.remaining),
              credits_lease_until = CASE WHEN held.credits_hold_until > now() THEN held.credits_lease_until
                                         ELSE GREATEST(held.credits_lease_until,
                                                       now() + make_interval(secs => $5::float8 / 1000)) END
         FROM unnest($1::text[], $2::int[], $3::int[], $4::bigint[]) AS spent(id, generation, epoch, remaining)
        WHERE held.id = spent.id AND held.credits_generation = spent.generation
          AND held.credits_epoch = spent.epoch AND held.credits_lease_until IS NOT NULL
        RETURNING held.id, COALESCE(held.credits_hold_until <= now(), true) AS renewed`,
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

  /** Gives back credits spent on the row under claim(), while the row is still that balance. */
  async refundClaimed(id: string, generation: number, epoch: number, count = 1): Promise<void> {
    await this.manager().query(
      `UPDATE ${this.table} SET credits_remaining = credits_remaining + $4::bigint
        WHERE id = $1 AND credits_generation = $2 AND credits_epoch = $3 AND credits_lease_until IS NULL`,
      [id, generation, epoch, count],
    );
  }

  /**
   * Gives back what settled runs did not use, in the transaction that records their outcome: to the
   * row as the database ledger holds it (no epoch), or to a row claim of the Redis ledger while the row
   * still is that balance. Refunds to one row add up first (an UPDATE applies one joined row per row).
   */
  async refundSettled(
    manager: EntityManager,
    refunds: readonly { id: string; generation: number; epoch: number | null; count: number }[],
  ): Promise<void> {
    if (!refunds.length) return;
    const t = this.table;
    await manager.query(
      `WITH owed AS (
         SELECT id, generation, epoch, sum(count) AS count
           FROM unnest($1::text[], $2::int[], $3::int[], $4::bigint[]) AS o(id, generation, epoch, count)
          GROUP BY id, generation, epoch
       )
       UPDATE ${t} SET credits_remaining = ${t}.credits_remaining + owed.count
         FROM owed
        WHERE ${t}.id = owed.id AND ${t}.credits_generation = owed.generation
          AND (owed.epoch IS NULL
               OR (${t}.credits_epoch = owed.epoch AND ${t}.credits_lease_until IS NULL))`,
      [
        refunds.map((refund) => refund.id),
        refunds.map((refund) => refund.generation),
        refunds.map((refund) => refund.epoch),
        refunds.map((refund) => refund.count),
      ],
    );
  }

  /**
   * Marks the low-balance event sent for this generation; false when it already was (or the balance was
   * set again meanwhile), so it is recorded once whichever instance saw the crossing.
   */
  async claimLow(manager: EntityManager, id: string, generation: number): Promise<boolean> {
    const [rows] = await manager.query<[unknown[], number]>(
      `UPDATE ${this.table} SET credits_low_generation = $2
        WHERE id = $1 AND credits_generation = $2 AND credits_low_generation IS DISTINCT FROM $2
        RETURNING id`,
      [id, generation],
    );
    return rows.length > 0;
  }

  /** The credit columns qualified by the table (RETURNING of an UPDATE ... FROM names both). */
  private columns(): string {
    return CREDIT_COLUMNS.split(', ')
      .map((column) => `${this.table}.${column}`)
      .join(', ');
  }
}
