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
  /**
   * `ride`: work to do in the same call for the request if every window lets it through (a storage
   * that carries riders, below; the others leave its `answer` unset).
   */
  countWindows(windows: readonly WindowToCount[], ride?: WindowRide): WindowCount[] | Promise<WindowCount[]>;
}

/**
 * A request's work that rides in the script run counting its windows, done only when every window let
 * the request through: the credits step's spend (redis-credit-ledger.ts), so that a request's windows and
 * balances take one round trip to Redis, not one each. `keys` and `args` are the rider's Lua's (see
 * RideCarrier.carry); the requests of one run that ride alike share its `keys` and `args`.
 */
export interface WindowRide {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  /**
   * Set by the storage: what the rider answered for this request. Left unset when it did not ride: a
   * window refused the request, or Redis could not be asked (the outage policy answered the windows).
   */
  answer?: number[];
  /**
   * Set by the storage when the run failed (Redis unreachable, or no answer in time): whether Redis ran
   * it is unknown, so the rider must count what it sent as possibly spent.
   */
  failed?: boolean;
}

/**
 * A storage whose script can carry a rider. The rider's Lua defines
 * `begin_ride(first_key, first_arg)`, called once per run before any request is counted with the index
 * of its first key in KEYS and of its first argument in ARGV, and returning
 * `{ ride = function(counts, passed), finish = function() }`: `ride` appends to `counts` the number of
 * values it answers for one request and then those values (only `0` for a request a window refused,
 * `passed` false); `finish` writes what the run's requests took, once, at the end.
 */
export interface RideCarrier extends WindowBatchCounter {
  carry(riderLua: string): void;
}

export function carriesRides(storage: object): storage is RideCarrier {
  return typeof (storage as Partial<RideCarrier>).carry === 'function';
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
