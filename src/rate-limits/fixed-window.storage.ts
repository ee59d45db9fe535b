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

/**
 * One counter per key and window. Unlike @nestjs/throttler's default storage (an array of hit
 * timestamps filtered on every request), the cost per request does not grow with the limit.
 */
export class MemoryFixedWindowStorage implements ThrottlerStorage {
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

  /** `increment` without the promise: the counters are in this process (RateLimitStep's fast path). */
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

// INCR and the first PEXPIRE happen atomically, so concurrent instances share one exact count.
const INCREMENT_SCRIPT = `
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {hits, ttl}`;

/** The same fixed windows in Redis, shared by every instance. */
export class RedisFixedWindowStorage implements ThrottlerStorage {
  private readonly logger = new Logger('RateLimit');
  private lastWarning = 0;

  constructor(
    private readonly redis: Redis,
    private readonly failureMode: 'open' | 'closed',
  ) {
    redis.defineCommand('gatehouseIncrementWindow', { numberOfKeys: 1, lua: INCREMENT_SCRIPT });
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    _block: number,
    name: string,
  ): Promise<WindowCount> {
    try {
      const [hits, msLeft] = (await (
        this.redis as unknown as {
          gatehouseIncrementWindow(key: string, ttl: number): Promise<[number, number]>;
        }
      ).gatehouseIncrementWindow(`gatehouse:rl:${name}:${key}`, ttl)) as [number, number];
      return record(hits, limit, msLeft);
    } catch (error) {
      return this.onFailure(error as Error, limit);
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
