import { CreditBalanceColumns } from '../common/credit-balance.columns';
import {
  Column,
  CreateDateColumn,
  Entity,
  ForeignKey,
  Index,
  PrimaryColumn,
  UpdateDateColumn,
} from 'typeorm';
import { Identity } from '../identities/identity.entity';

export const KEY_TYPES = ['personal', 'team', 'service'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

export const KEY_STATUSES = ['active', 'expired', 'revoked', 'disabled'] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export { REFILL_INTERVALS } from '../common/usage-controls.dto';
export type { RefillInterval } from '../common/usage-controls.dto';

@Entity({ name: 'api_keys' })
@Index('api_keys_organization_created_idx', ['organizationId', 'createdAt'])
@Index('api_keys_owner_idx', ['ownerId'])
// The scheduled scans (rotation policies, expiry) read these instead of the whole table.
@Index('api_keys_next_rotation_idx', ['nextRotationAt'], { where: 'rotation_enabled' })
@Index('api_keys_expiration_idx', ['expiration'], { where: 'expiration IS NOT NULL' })
@Index('api_keys_credits_refill_idx', ['creditsRefilledAt'], { where: 'credits_refill_interval IS NOT NULL' })
@Index('api_keys_identity_idx', ['identityId'], { where: 'identity_id IS NOT NULL' })
export class ApiKey extends CreditBalanceColumns {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  /** Built-in role name or an organization's custom `role_name`. */
  @Column({ type: 'text' })
  role: string;

  @Column({ type: 'text' })
  type: KeyType;

  /** The user a personal key acts for; the creating user for team and service keys (may be null). */
  @Column({ name: 'owner_id', type: 'text', nullable: true })
  ownerId: string | null;

  @Column({ name: 'team_id', type: 'text', nullable: true })
  teamId: string | null;

  /** HMAC-SHA256 of the value; the only form in which the value is kept. */
  @Index('api_keys_key_hash_key', { unique: true })
  @Column({ name: 'key_hash', type: 'text' })
  keyHash: string;

  @Column({ type: 'text' })
  start: string;

  /** While a rotation's grace period runs, the replaced value still authenticates until then. */
  @Index('api_keys_previous_key_hash_key', { unique: true, where: 'previous_key_hash IS NOT NULL' })
  @Column({ name: 'previous_key_hash', type: 'text', nullable: true })
  previousKeyHash: string | null;

  @Column({ name: 'previous_key_expires_at', type: 'timestamptz', precision: 3, nullable: true })
  previousKeyExpiresAt: Date | null;

  @Column({ name: 'previous_key_last_used_at', type: 'timestamptz', precision: 3, nullable: true })
  previousKeyLastUsedAt: Date | null;

  @Column({ type: 'timestamptz', precision: 3, nullable: true })
  expiration: Date | null;

  /** Set once the expiry has been recorded in the audit log (so it is recorded once). */
  @Column({ name: 'expiry_recorded_at', type: 'timestamptz', precision: 3, nullable: true })
  expiryRecordedAt: Date | null;

  /** Set once `key.expiring` has been recorded for the current expiration. */
  @Column({ name: 'expiry_warned_at', type: 'timestamptz', precision: 3, nullable: true })
  expiryWarnedAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', precision: 3, nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'revoked_reason', type: 'text', nullable: true })
  revokedReason: string | null;

  @Column({ name: 'deleted_at', type: 'timestamptz', precision: 3, nullable: true })
  deletedAt: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', precision: 3, nullable: true })
  lastUsedAt: Date | null;

  @Column({ name: 'last_rotated_at', type: 'timestamptz', precision: 3, nullable: true })
  lastRotatedAt: Date | null;

  @Column({ name: 'rotation_enabled', type: 'boolean', default: false })
  rotationEnabled: boolean;

  @Column({ name: 'rotation_days', type: 'integer', nullable: true })
  rotationDays: number | null;

  @Column({ name: 'rotation_grace_seconds', type: 'integer', default: 0 })
  rotationGraceSeconds: number;

  @Column({ name: 'next_rotation_at', type: 'timestamptz', precision: 3, nullable: true })
  nextRotationAt: Date | null;

  @Column({ name: 'allowed_referrers', type: 'text', array: true, default: () => "'{}'" })
  allowedReferrers: string[];

  @Column({ name: 'allowed_ips', type: 'text', array: true, default: () => "'{}'" })
  allowedIps: string[];

  @Column({ name: 'rate_limit_per_minute', type: 'integer', nullable: true })
  rateLimitPerMinute: number | null;

  @Column({ name: 'rate_limit_per_hour', type: 'integer', nullable: true })
  rateLimitPerHour: number | null;

  @Column({ name: 'hide_credentials', type: 'boolean', default: false })
  hideCredentials: boolean;

  /** The kill switch: a disabled key is refused (`key_disabled`) until it is enabled again. */
  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** The integrator's own JSON object (plan, customer id), at most 4 KiB as JSON text. */
  @Column({ type: 'jsonb', nullable: true })
  meta: Record<string, unknown> | null;

  // The credit columns (credits_*) come from CreditBalanceColumns.

  /** The identity (the customer behind keys) the key belongs to, of the same organization; null: none. */
  @Column({ name: 'identity_id', type: 'text', nullable: true })
  // A deleted key row outlives its identity's deletion with the reference cleared (Identities migration).
  @ForeignKey(() => Identity, { name: 'api_keys_identity_id_fkey', onDelete: 'SET NULL' })
  identityId: string | null;

  @Column({ name: 'last_used_ip', type: 'text', nullable: true })
  lastUsedIp: string | null;

  /** When the key was first reported leaked (GitHub secret scanning or a public report); null: never. */
  @Column({ name: 'leaked_at', type: 'timestamptz', precision: 3, nullable: true })
  leakedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}

/**
 * A key's status is derived, never stored, so it cannot disagree with its expiration. Precedence:
 * revoked, then expired, then disabled, then active.
 */
export function keyStatus(
  key: Pick<ApiKey, 'revokedAt' | 'expiration' | 'enabled'>,
  now = new Date(),
): KeyStatus {
  if (key.revokedAt) return 'revoked';
  if (key.expiration && key.expiration.getTime() <= now.getTime()) return 'expired';
  if (!key.enabled) return 'disabled';
  return 'active';
}
