import type { ApiKey, RefillInterval } from '../api-key.entity';

/** 00:00 UTC of the day, or of the 1st of the month, at or before `at`. */
export function refillBoundaryAtOrBefore(interval: RefillInterval, at: Date): Date {
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  return interval === 'daily'
    ? new Date(Date.UTC(year, month, at.getUTCDate()))
    : new Date(Date.UTC(year, month, 1));
}

/** The first refill boundary strictly after `at`. */
export function refillBoundaryAfter(interval: RefillInterval, at: Date): Date {
  const floor = refillBoundaryAtOrBefore(interval, at);
  return interval === 'daily'
    ? new Date(Date.UTC(floor.getUTCFullYear(), floor.getUTCMonth(), floor.getUTCDate() + 1))
    : new Date(Date.UTC(floor.getUTCFullYear(), floor.getUTCMonth() + 1, 1));
}

type CreditSchedule = Pick<
  ApiKey,
  'creditsRefillInterval' | 'creditsRefilledAt' | 'creditsSetAt' | 'createdAt'
>;

/** Since when the balance stands: its last refill or the last time it was set, whichever is later. */
function balanceSince(key: CreditSchedule): Date {
  const times = [key.creditsRefilledAt, key.creditsSetAt].filter((t): t is Date => t !== null);
  return times.length ? new Date(Math.max(...times.map((t) => t.getTime()))) : key.createdAt;
}

/** When the balance is next refilled; null without a refill. */
export function nextRefillAt(key: CreditSchedule): Date | null {
  return key.creditsRefillInterval ? refillBoundaryAfter(key.creditsRefillInterval, balanceSince(key)) : null;
}

/**
 * The boundary a refill is due for at `now` (the latest one passed since the balance stood), or null.
 * A key unused for three days is refilled once, for the latest boundary.
 */
export function dueRefill(key: CreditSchedule, now: Date): Date | null {
  const next = nextRefillAt(key);
  if (!next || next.getTime() > now.getTime()) return null;
  return refillBoundaryAtOrBefore(key.creditsRefillInterval!, now);
}
