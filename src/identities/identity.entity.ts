import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { RefillInterval } from '../common/usage-controls.dto';

/** pg answers bigint as a string (it may exceed 2^53); credit balances stay far below that. */
const bigintAsNumber = {
  to: (value: number | null) => value,
  from: (value: string | null) => (value === null ? null : Number(value)),
};

/**
 * The customer behind keys: the integrator's own id for it (`external_id`), its data, and the rate
 * limit and credits its keys will share. Keys name it by `api_keys.identity_id`.
 */
@Entity({ name: 'identities' })
@Index('identities_organization_created_idx', ['organizationId', 'createdAt'])
@Index('identities_organization_external_id_key', ['organizationId', 'externalId'], { unique: true })
export class Identity {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ name: 'external_id', type: 'text' })
  externalId: string;

  /** The integrator's own JSON object, at most 4 KiB as JSON text. */
  @Column({ type: 'jsonb', nullable: true })
  meta: Record<string, unknown> | null;

  @Column({ name: 'rate_limit_per_minute', type: 'integer', nullable: true })
  rateLimitPerMinute: number | null;

  @Column({ name: 'rate_limit_per_hour', type: 'integer', nullable: true })
  rateLimitPerHour: number | null;

  // As on keys, the credit columns are never written by save(): once spends move the balance between a
  // read and a save, a save would put the old value back. IdentitiesRepository.setCredits writes them.

  /** Credits left; null: no identity-level budget. */
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

  /** The amount last set or refilled (the 10% mark of `identity.credits_low` is measured against it). */
  @Column({
    name: 'credits_baseline',
    update: false,
    type: 'bigint',
    nullable: true,
    transformer: bigintAsNumber,
  })
  creditsBaseline: number | null;

  /** Bumped whenever the balance is set, as on keys. */
  @Column({ name: 'credits_generation', update: false, type: 'integer', default: 0 })
  creditsGeneration: number;

  /** The generation whose `identity.credits_low` was sent (claimed once across instances). */
  @Column({ name: 'credits_low_generation', update: false, type: 'integer', nullable: true })
  creditsLowGeneration: number | null;

  /** Which copy of the balance is live with Redis (redis-credit-ledger.ts); the other lease columns stay in SQL. */
  @Column({ name: 'credits_epoch', update: false, type: 'integer', default: 0 })
  creditsEpoch: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
