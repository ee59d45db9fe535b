import { MemoryWindowStorage, WindowCounters } from './memory-window-storage';
import type { RedisClient } from '../redis/redis.connection';
import { RedisWindowStorage } from './redis-window-storage';
import { headerSeconds, type TimeSource, type WindowCount, type WindowToCount } from './window-counter';
import { SELF_BATCHED_SCRIPTS } from '../redis/self-batched-scripts';

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
  private readonly windows = new WindowCounters<{ hits: number; resetAt: number }>();

  constructor(clock: TimeSource = Date) {
    super(clock);
  }

  incrementNow(key: string, ttl: number, limit: number, name: string, now: number): WindowCount {
    let window = this.windows.get(name, key);
    if (!window || window.resetAt <= now) {
      window = { hits: 0, resetAt: now + ttl };
      this.windows.set(name, key, window);
    }
    window.hits += 1;
    return record(window.hits, limit, window.resetAt - now);
  }

  protected sweep(now: number): void {
    this.windows.sweep((window) => window.resetAt <= now);
  }
}

// Each window's key comes with its ttl and limit in ARGV, after the number of requests to count (a hot
// key's requests of one event-loop turn) and the number of a rider's keys (RUN_LUA, RedisWindowStorage). Each request is counted in turn,
// in every window up to and including its first spent one (count_requests, RedisWindowStorage), and
// answers hits and milliseconds left for each window counted; the counts are written once at
// the end, with the first PEXPIRE of a new window, atomically, so concurrent instances share one exact
// count. Redis's clock stands still while a script runs, so every request sees the same time left.
const INCREMENT_SCRIPT = `
local windows = {}
for i = 1, window_count do
  local key = KEYS[i]
  local ttl = tonumber(ARGV[2 * i + 1])
  local left = redis.call('PTTL', key)
  local fresh = left < 0
  if fresh then left = ttl end
  windows[i] = { hits = tonumber(redis.call('GET', key) or '0'), left = left, fresh = fresh,
                 ttl = ttl, limit = tonumber(ARGV[2 * i + 2]), added = 0 }
end
local counts = count_requests(windows, function(w, counts)
  w.hits = w.hits + 1
  w.added = w.added + 1
  counts[#counts + 1] = w.hits
  counts[#counts + 1] = w.left
  return w.hits > w.limit
end)
for i, w in ipairs(windows) do
  local key = KEYS[i]
  if w.added > 0 then
    redis.call('INCRBY', key, w.added)
    if w.fresh then redis.call('PEXPIRE', key, w.ttl) end
  end
end
return counts`;

/** The same fixed windows in Redis, shared by every instance. */
export class RedisFixedWindowStorage extends RedisWindowStorage {
  constructor(redis: RedisClient, failureMode: 'open' | 'closed') {
    super(redis, failureMode, SELF_BATCHED_SCRIPTS.fixedWindows, INCREMENT_SCRIPT, 'gatehouse:rl:');
  }

  protected readonly valuesPerWindow = 2;

  protected countsOf(answer: number[], windows: readonly WindowToCount[]): WindowCount[] {
    const counts: WindowCount[] = [];
    for (let i = 0; i < answer.length; i += 2)
      counts.push(record(answer[i], windows[i / 2].limit, answer[i + 1]));
    return counts;
  }
}
