import { MemoryWindowStorage } from './memory-window-storage';
import type Redis from 'ioredis';
import { RedisWindowStorage } from './redis-window-storage';
import { headerSeconds, type TimeSource, type WindowCount, type WindowToCount } from './window-counter';

// Where RateLimitStep and its spec have always found them.
export { countsWindowsTogether } from './window-counter';
export type { WindowBatchCounter, WindowCount, WindowToCount } from './window-counter';

/**
 * Fixed windows (RATE_LIMIT_WINDOW=fixed): one count per key and window, reset when the window ends.
 * Refused requests count too (harmless here: the count starts again at the window's end). A client can
 * get twice its limit through across a window's edge, which sliding-window.storage.ts closes.
 */

function record(hits: number, limit: number, msLeft: number): WindowCount {
  const seconds = headerSeconds(msLeft);
  const isBlocked = hits > limit;
  return { totalHits: hits, timeToExpire: seconds, isBlocked, timeToBlockExpire: isBlocked ? seconds : 0 };
}

/**
 * One counter per key and window. Unlike @nestjs/throttler's default storage (an array of hit
 * timestamps filtered on every request), the cost per request does not grow with the limit.
 */
export class MemoryFixedWindowStorage extends MemoryWindowStorage {
  private readonly windows = new Map<string, { hits: number; resetAt: number }>();

  constructor(clock: TimeSource = Date) {
    super(clock);
  }

  incrementNow(key: string, ttl: number, limit: number, name: string): WindowCount {
    const now = this.clock.now();
    const id = `${name}:${key}`;
    let window = this.windows.get(id);
    if (!window || window.resetAt <= now) {
      window = { hits: 0, resetAt: now + ttl };
      this.windows.set(id, window);
    }
    window.hits += 1;
    return record(window.hits, limit, window.resetAt - now);
  }

  protected sweep(now: number): void {
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

/** The same fixed windows in Redis, shared by every instance. */
export class RedisFixedWindowStorage extends RedisWindowStorage {
  constructor(redis: Redis, failureMode: 'open' | 'closed') {
    super(redis, failureMode, 'gatehouseIncrementWindows', INCREMENT_SCRIPT, 'gatehouse:rl:');
  }

  protected countsOf(answer: number[], windows: readonly WindowToCount[]): WindowCount[] {
    const counts: WindowCount[] = [];
    for (let i = 0; i < answer.length; i += 2)
      counts.push(record(answer[i], windows[i / 2].limit, answer[i + 1]));
    return counts;
  }
}
