import {
  Column,
  CreateDateColumn,
  Entity,
  ForeignKey,
  Index,
  PrimaryColumn,
  UpdateDateColumn,
} from 'typeorm';
import { Organization } from '../accounts/organization.entity';
import { CreditBalanceColumns } from '../common/credit-balance.columns';

/**
 * The customer behind keys: the integrator's own id for it (`external_id`), its data, and the rate
 * limit and credits its keys will share. Keys name it by `api_keys.identity_id`.
 */
@Entity({ name: 'identities' })
@Index('identities_organization_created_idx', ['organizationId', 'createdAt'])
@Index('identities_organization_external_id_key', ['organizationId', 'externalId'], { unique: true })
// The refill job's scan, as on keys (IdentityCredits migration).
@Index('identities_credits_refill_idx', ['creditsRefilledAt'], {
  where: 'credits_refill_interval IS NOT NULL',
})
export class Identity extends CreditBalanceColumns {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  @ForeignKey(() => Organization, { name: 'identities_organization_id_fkey', onDelete: 'CASCADE' })
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

  // The credit columns (credits_*) come from CreditBalanceColumns, as on keys.

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
