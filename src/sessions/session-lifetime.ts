import type { DashboardSession } from './dashboard-session.entity';

/** Why a session no longer authenticates. */
export type SessionEnd = 'revoked' | 'idle' | 'capped';

/**
 * Whether a session has ended at `now` (epoch ms), and why: the one rule the refresh endpoint and the
 * key check (for access tokens issued to a session) both apply.
 */
export function sessionEndAt(
  session: Pick<DashboardSession, 'revokedAt' | 'lastUsedAt' | 'expiresAt'>,
  now: number,
  idleMs: number,
): SessionEnd | undefined {
  if (session.revokedAt) return 'revoked';
  if (now >= session.expiresAt.getTime()) return 'capped';
  if (now - session.lastUsedAt.getTime() > idleMs) return 'idle';
  return undefined;
}
