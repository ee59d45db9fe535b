import { sessionEndAt } from './session-lifetime';

describe('sessionEndAt', () => {
  const start = Date.parse('2030-01-01T00:00:00Z');
  const idleMs = 30 * 60_000;
  const session = {
    revokedAt: null,
    lastUsedAt: new Date(start),
    expiresAt: new Date(start + 12 * 3_600_000),
  };

  it('keeps a session used within the idle limit and before its cap', () => {
    expect(sessionEndAt(session, start, idleMs)).toBeUndefined();
    expect(sessionEndAt(session, start + idleMs, idleMs)).toBeUndefined();
  });

  it('ends a session idle for longer than the limit', () => {
    expect(sessionEndAt(session, start + idleMs + 1, idleMs)).toBe('idle');
  });

  it('ends a session at its absolute cap, however recently used', () => {
    const recent = { ...session, lastUsedAt: new Date(start + 12 * 3_600_000 - 1000) };
    expect(sessionEndAt(recent, start + 12 * 3_600_000, idleMs)).toBe('capped');
  });

  it('ends a revoked session at once', () => {
    expect(sessionEndAt({ ...session, revokedAt: new Date(start) }, start, idleMs)).toBe('revoked');
  });
});
