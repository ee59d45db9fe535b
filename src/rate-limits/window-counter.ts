import type { ThrottlerStorage } from '@nestjs/throttler';

/**
 * What every rate-limit storage here shares, whichever way it counts (fixed-window.storage.ts,
 * sliding-window.storage.ts): the shape of one window's answer and the batch call RateLimitStep makes.
 */

/** What a storage reports for one window after counting a hit. */
export type WindowCount = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/** One of a key's windows to count: the storage key, the window's length and limit, the throttler's name. */
export interface WindowToCount {
  key: string;
  ttl: number;
  limit: number;
  name: string;
}

/**
 * A storage that counts all of a key's windows in one call (RateLimitStep's path): in order, up to and
 * including the first spent one, which is what counting them one by one with the throttler's
 * handleRequest does (a spent window ends the request; the windows after it are not counted). The
 * counts come back at once when they are in this process, else as one promise: one round trip to
 * Redis for every window instead of one per window.
 */
export interface WindowBatchCounter {
  countWindows(windows: readonly WindowToCount[]): WindowCount[] | Promise<WindowCount[]>;
}

export function countsWindowsTogether(storage: object): storage is WindowBatchCounter {
  return typeof (storage as Partial<WindowBatchCounter>).countWindows === 'function';
}

/**
 * Where an in-process storage reads the time: `Date` by default, the app's Clock in the app
 * (rate-limits.module.ts), so a test can carry a key across a window's edge without waiting for it.
 */
export interface TimeSource {
  now(): number;
}

/** Whole seconds for a header, at least 1: a client told 0 would retry at once and be refused again. */
export function headerSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
