import { Check, Column, Entity, ForeignKey, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { Organization } from '../accounts/organization.entity';

export const LEAK_RESPONSES = ['revoke', 'disable', 'notify'] as const;
export type LeakResponse = (typeof LEAK_RESPONSES)[number];

/**
 * An organization's rules for its keys. An organization without a row has the defaults (revoke a
 * leaked key, no lifetime limit), so existing organizations need no backfill.
 */
@Entity({ name: 'organization_policies' })
// The constraints LeakedKeysPolicies made, as it wrote them: a new response or bound needs a migration too.
@Check('organization_policies_leak_response_check', `"leak_response" IN ('revoke', 'disable', 'notify')`)
@Check('organization_policies_max_key_lifetime_days_check', `"max_key_lifetime_days" BETWEEN 1 AND 3650`)
export class OrganizationPolicy {
  @PrimaryColumn({ name: 'organization_id', type: 'text' })
  @ForeignKey(() => Organization, { name: 'organization_policies_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId: string;

  /** What happens to an active key reported leaked. */
  @Column({ name: 'leak_response', type: 'text', default: 'revoke' })
  leakResponse: LeakResponse;

  /** Keys may be given an expiration at most this many days ahead; null: no limit. */
  @Column({ name: 'max_key_lifetime_days', type: 'integer', nullable: true })
  maxKeyLifetimeDays: number | null;

  @Column({ name: 'require_expiration', type: 'boolean', default: false })
  requireExpiration: boolean;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
