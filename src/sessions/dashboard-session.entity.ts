import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * A dashboard sign-in: the browser holds its refresh token in an httpOnly cookie, this row holds only
 * the token's HMAC. Times are written from the injectable Clock, so tests can move them.
 */
@Entity({ name: 'dashboard_sessions' })
// Sign-in deletes the user's ended sessions.
@Index('dashboard_sessions_user_idx', ['userId'])
export class DashboardSession {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'dashboard_sessions_pkey' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ name: 'user_id', type: 'text' })
  userId: string;

  /** HMAC-SHA256 of the refresh token under the server's hash secret; the token itself is never stored. */
  @Index('dashboard_sessions_refresh_hash_key', { unique: true })
  @Column({ name: 'refresh_hash', type: 'text' })
  refreshHash: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  /** The last sign-in or refresh; the idle limit counts from here. */
  @Column({ name: 'last_used_at', type: 'timestamptz', precision: 3 })
  lastUsedAt: Date;

  /** The absolute cap: the session ends here however active it is. */
  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;

  /** Set by sign-out (or when the user turns out to be deactivated). */
  @Column({ name: 'revoked_at', type: 'timestamptz', precision: 3, nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'user_agent', type: 'text', nullable: true })
  userAgent: string | null;

  @Column({ type: 'text', nullable: true })
  ip: string | null;
}
