import { Logger } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type Redis from 'ioredis';
import { RateLimitError, RateLimitErrorCode } from './rate-limits.errors';

/** What a storage reports for one window after counting a hit. */
export type WindowCount = Awaited<ReturnType<ThrottlerStorage['increment']>>;

function record(hits: number, limit: number, msLeft: number): WindowCount {
  const seconds = Math.max(1, Math.ceil(msLeft / 1000));
  const isBlocked = hits > limit;
  return { totalHits: hits, timeToExpire: seconds, isBlocked, timeToBlockExpire: isBlocked ? seconds : 0 };
}

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
 * One counter per key and window. Unlike @nestjs/throttler's default storage (an array of hit
 * timestamps filtered on every request), the cost per request does not grow with the limit.
 */
export class MemoryFixedWindowStorage implements ThrottlerStorage, WindowBatchCounter {
  private readonly windows = new Map<string, { hits: number; resetAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor() {
    this.sweeper = setInterval(() => this.sweep(), 30_000);
    this.sweeper.unref();
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    _block: number,
    name: string,
  ): Promise<WindowCount> {
    return this.incrementNow(key, ttl, limit, name);
  }

  countWindows(windows: readonly WindowToCount[]): WindowCount[] {
    const counts: WindowCount[] = [];
    for (const { key, ttl, limit, name } of windows) {
      const count = this.incrementNow(key, ttl, limit, name);
      counts.push(count);
      if (count.isBlocked) break;
    }
    return counts;
  }

  /** `increment` without the promise: the counters are in this process. */
  incrementNow(key: string, ttl: number, limit: number, name: string): WindowCount {
    const now = Date.now();
    const id = `${name}:${key}`;
    let window = this.windows.get(id);
    if (!window || window.resetAt <= now) {
      window = { hits: 0, resetAt: now + ttl };
      this.windows.set(id, window);
    }
    window.hits += 1;
    return record(window.hits, limit, window.resetAt - now);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [id, window] of this.windows) if (window.resetAt <= now) this.windows.delete(id);
  }
}

// INCR and the first PEXPIRE happen atomically, so concurrent instances share one exact count. Each key
// (a window) comes with its ttl and limit in ARGV; the script stops after the first spent window, as
// WindowBatchCounter says, and answers hits and milliseconds left for each window it counted.
const INCREMENT_SCRIPT = `
local counts = {}
for i, key in ipairs(KEYS) do
  local ttl = tonumber(ARGV[2 * i - 1])
  local hits = redis.call('INCR', key)
  local left = redis.call('PTTL', key)
  if left < 0 then
    redis.call('PEXPIRE', key, ttl)
    left = ttl
  end
  counts[2 * i - 1] = hits
  counts[2 * i] = left
  if hits > tonumber(ARGV[2 * i]) then break end
end
return counts`;

interface WindowScript {
  gatehouseIncrementWindows(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Promise<number[]>;
}

/** The same fixed windows in Redis, shared by every instance. */
export class RedisFixedWindowStorage implements ThrottlerStorage, WindowBatchCounter {
  private readonly logger = new Logger('RateLimit');
  private lastWarning = 0;

  constructor(
    private readonly redis: Redis,
    private readonly failureMode: 'open' | 'closed',
  ) {
    // The number of keys varies (numberOfKeys omitted): it is the first argument of every call.
    redis.defineCommand('gatehouseIncrementWindows', { lua: INCREMENT_SCRIPT });
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    _block: number,
    name: string,
  ): Promise<WindowCount> {
    const [count] = await this.countWindows([{ key, ttl, limit, name }]);
    return count;
  }

  async countWindows(windows: readonly WindowToCount[]): Promise<WindowCount[]> {
    const keys = windows.map(({ key, name }) => `gatehouse:rl:${name}:${key}`);
    const args = windows.flatMap(({ ttl, limit }) => [ttl, limit]);
    try {
      const answer = await (this.redis as unknown as WindowScript).gatehouseIncrementWindows(
        windows.length,
        ...keys,
        ...args,
      );
      const counts: WindowCount[] = [];
      for (let i = 0; i < answer.length; i += 2)
        counts.push(record(answer[i], windows[i / 2].limit, answer[i + 1]));
      return counts;
    } catch (error) {
      return windows.map(({ limit }) => this.onFailure(error as Error, limit));
    }
  }

  /** Redis unreachable: fail open (let the request through, warn at most every 10 s) or closed (503). */
  private onFailure(error: Error, limit: number): WindowCount {
    if (this.failureMode === 'closed') {
      throw new RateLimitError(
        RateLimitErrorCode.RateLimiterUnavailable,
        'Rate limits cannot be checked right now; retry shortly.',
        { cause: error },
      );
    }
    if (Date.now() - this.lastWarning > 10_000) {
      this.lastWarning = Date.now();
      this.logger.warn(`rate limits not enforced, Redis unavailable: ${error.message}`);
    }
    return record(0, limit, 1000);
  }
}
