import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { DashboardSession } from './dashboard-session.entity';

/**
 * A refresh token a refresh replaced, kept (as its HMAC) until its session is deleted: presenting it again
 * after a short grace means two parties hold the session's tokens, so the session ends (reuse detection).
 */
@Entity({ name: 'dashboard_session_retired_tokens' })
@Index('dashboard_session_retired_tokens_session_idx', ['sessionId'])
export class RetiredRefreshToken {
  /** HMAC-SHA256 of the replaced token, as DashboardSession.refreshHash. */
  @PrimaryColumn({
    name: 'refresh_hash',
    type: 'text',
    primaryKeyConstraintName: 'dashboard_session_retired_tokens_pkey',
  })
  refreshHash: string;

  @Column({ name: 'session_id', type: 'text' })
  sessionId: string;

  // Deleting ended sessions (at the user's next sign-in) takes their retired tokens along.
  @ManyToOne(() => DashboardSession, { onDelete: 'CASCADE' })
  @JoinColumn({
    name: 'session_id',
    foreignKeyConstraintName: 'dashboard_session_retired_tokens_session_fkey',
  })
  session?: DashboardSession;

  /** When a refresh replaced it: the start of its grace. */
  @Column({ name: 'retired_at', type: 'timestamptz', precision: 3 })
  retiredAt: Date;
}
