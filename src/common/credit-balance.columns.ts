import { Column } from 'typeorm';
import type { CreditsDto, RefillInterval } from './usage-controls.dto';

/**
 * pg answers bigint as a string (it may exceed 2^53); balances and token counts stay far below that.
 * Null stays null, for the nullable columns.
 */
export const bigintAsNumber = {
  to: <T extends number | null>(value: T): T => value,
  from: (value: string | number | null) => (value === null ? null : Number(value)),
};

/**
 * The credit columns every row that holds a balance carries (keys and identities; see `CreditTableName`
 * in src/api-keys/credits/credit-balance-table.ts), declared once for the entities that extend this class
 * (TypeORM's concrete table inheritance: each entity keeps its own table).
 *
 * None is written by save(): spends move the balance between a read and a save, and a save would put
 * the old value back. The owning module's repository writes them (CreditBalanceTable).
 */
export abstract class CreditBalanceColumns {
  /**
   * Credits left; null: no balance (unlimited). With Redis the live balance is Redis's and this column
   * follows it within a second (src/api-keys/credits); without Redis this column is the balance.
   */
  @Column({
    name: 'credits_remaining',
    update: false,
    type: 'bigint',
    nullable: true,
    transformer: bigintAsNumber,
  })
  creditsRemaining: number | null;

  @Column({ name: 'credits_refill_interval', update: false, type: 'text', nullable: true })
  creditsRefillInterval: RefillInterval | null;

  @Column({ name: 'credits_refill_amount', update: false, type: 'integer', nullable: true })
  creditsRefillAmount: number | null;

  /** When the balance was last refilled: the refill boundary (00:00 UTC) it was refilled for. */
  @Column({ name: 'credits_refilled_at', update: false, type: 'timestamptz', precision: 3, nullable: true })
  creditsRefilledAt: Date | null;

  /** When the balance was last set by create or PATCH. */
  @Column({ name: 'credits_set_at', update: false, type: 'timestamptz', precision: 3, nullable: true })
  creditsSetAt: Date | null;

  /** The amount last set or refilled: the `*.credits_low` event is sent when the balance falls below 10% of it. */
  @Column({
    name: 'credits_baseline',
    update: false,
    type: 'bigint',
    nullable: true,
    transformer: bigintAsNumber,
  })
  creditsBaseline: number | null;

  /**
   * Bumped whenever the balance is set (create, PATCH, refill): a write-back from a cached or Redis
   * balance of an older generation never overwrites a newer one.
   */
  @Column({ name: 'credits_generation', update: false, type: 'integer', default: 0 })
  creditsGeneration: number;

  /** The generation `*.credits_low` was sent for: once per amount set or refilled, on any instance. */
  @Column({ name: 'credits_low_generation', update: false, type: 'integer', nullable: true })
  creditsLowGeneration: number | null;

  /**
   * With Redis, which copy of the balance is live (src/api-keys/credits/redis-credit-ledger.ts): bumped
   * at every hand-over between Redis and the row, so a Redis balance seeded before one is never spent.
   */
  @Column({ name: 'credits_epoch', update: false, type: 'integer', default: 0 })
  creditsEpoch: number;

  /** Until when Redis may spend this epoch's balance; null: the row is the balance. */
  @Column({
    name: 'credits_lease_until',
    update: false,
    select: false,
    type: 'timestamptz',
    precision: 3,
    nullable: true,
  })
  creditsLeaseUntil: Date | null;

  /** Until when an instance that could not reach Redis keeps the balance in the row. */
  @Column({
    name: 'credits_hold_until',
    update: false,
    select: false,
    type: 'timestamptz',
    precision: 3,
    nullable: true,
  })
  creditsHoldUntil: Date | null;
}

/** The credit columns of a balance as create or PATCH sets it (null: no balance). */
export function creditColumnsAsSet(
  credits: CreditsDto | null | undefined,
  now: Date,
): Partial<CreditBalanceColumns> {
  return {
    creditsRemaining: credits?.remaining ?? null,
    creditsBaseline: credits?.remaining ?? null,
    creditsRefillInterval: credits?.refill?.interval ?? null,
    creditsRefillAmount: credits?.refill?.amount ?? null,
    creditsSetAt: credits ? now : null,
  };
}
