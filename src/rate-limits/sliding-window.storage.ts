import { MemoryWindowStorage, WindowCounters } from './memory-window-storage';
import type { RedisClient } from '../redis/redis.connection';
import { RedisWindowStorage } from './redis-window-storage';
import { headerSeconds, type TimeSource, type WindowCount, type WindowToCount } from './window-counter';
import { SELF_BATCHED_SCRIPTS } from '../redis/self-batched-scripts';

/**
 * Sliding windows (RATE_LIMIT_WINDOW=sliding, the default): a sliding-window counter, as Unkey and
 * Kong's advanced rate limiting count. Time is cut into windows of the throttler's ttl (window
 * `floor(now / ttl)`), each with a count; a request is weighed against the current window's count plus
 * the previous window's, weighted by the share of the previous window still inside the span of one ttl
 * that ends now. So a client that spent its limit at the end of one window has almost all of it still
 * counted at the start of the next: the edge burst of fixed windows (the limit in the last second of
 * one minute, again in the first second of the next) is refused. Two counts per key and window, O(1)
 * per request whatever the limit.
 *
 * It assumes the previous window's requests were spread over it, so it is an estimate: the limit in the
 * last moment of one window followed by requests spread over the next can still pass up to 2N-1 in
 * one span of ttl; no burst at an edge passes more than N plus the share of the window elapsed.
 *
 * Refused requests are not counted. A client that keeps retrying faster than its limit would otherwise
 * carry more than its limit into every next window and, weighted, never fall back under it: locked out
 * for as long as it retries. Not counting them, each window holds at most what was let through, and the
 * wait a refusal announces is exact (Retry-After: the seconds until one more request fits, if no other
 * is let through meanwhile). A request refused by a later window of the same call (the hour, after the
 * minute passed it) is still counted in the earlier ones, as with fixed windows and the throttler's
 * handleRequest.
 *
 * What a window answers: `totalHits`, the weighted count rounded up (the refused request included when
 * refused), so X-RateLimit-Remaining is `limit - totalHits`; `timeToExpire`, the seconds until the
 * current window ends (X-RateLimit-Reset, as documented in the OpenAPI document); `timeToBlockExpire`,
 * for a refusal, the seconds until one more request fits (Retry-After), which after a whole limit spent
 * in one window is up to one window and a share of the next (ttl + ttl / limit).
 *
 * Counts use whole milliseconds and integer arithmetic throughout (a count weighted by milliseconds
 * stays far below 2^53), so the memory and Redis versions decide the same way to the millisecond.
 */

/** floor(a / b) for non-negative integers, exact even where the division rounds to a whole number. */
function floorDiv(a: number, b: number): number {
  let q = Math.floor(a / b);
  if (q * b > a) q -= 1;
  else if ((q + 1) * b <= a) q += 1;
  return q;
}

function ceilDiv(a: number, b: number): number {
  const q = floorDiv(a, b);
  return q * b < a ? q + 1 : q;
}

/**
 * Milliseconds until one more request fits, for a refused one: `current` and `previous` are the window's
 * counts, `elapsed` how far into the window `now` is. The same formula is in SLIDING_SCRIPT.
 */
export function msUntilOneMoreFits(
  current: number,
  previous: number,
  elapsed: number,
  ttl: number,
  limit: number,
): number {
  // Nothing ever fits under a limit below one; say when this window ends, as a fixed window would.
  if (limit < 1) return ttl - elapsed;
  const room = limit - current - 1;
  // In this window, once enough of the previous one has slid out: previous * (ttl - at) <= room * ttl.
  if (room >= 0 && previous > 0) return ttl - floorDiv(room * ttl, previous) - elapsed;
  // In the next window, where this one's count is the previous: current * (ttl - at) <= (limit - 1) * ttl.
  return ttl - elapsed + Math.max(0, ttl - floorDiv((limit - 1) * ttl, current));
}

interface SlidingCounter {
  /** The window the counts belong to, floor(now / ttl). */
  index: number;
  current: number;
  previous: number;
  ttl: number;
}

/** Sliding windows in this process (no REDIS_URL). */
export class MemorySlidingWindowStorage extends MemoryWindowStorage {
  private readonly counters = new WindowCounters<SlidingCounter>();

  constructor(clock: TimeSource = Date) {
    super(clock);
  }

  incrementNow(key: string, ttl: number, limit: number, name: string, now: number): WindowCount {
    let index = Math.floor(now / ttl);
    let counter = this.counters.get(name, key);
    if (!counter) {
      counter = { index, current: 0, previous: 0, ttl };
      this.counters.set(name, key, counter);
    } else if (index > counter.index) {
      counter.previous = index === counter.index + 1 ? counter.current : 0;
      counter.current = 0;
      counter.index = index;
      counter.ttl = ttl;
    } else {
      // A clock that stepped back counts in the window it last saw, from its start (the most cautious).
      index = counter.index;
    }
    const elapsed = Math.max(0, now - index * ttl);
    const left = ttl - elapsed;
    const weightedPrevious = counter.previous * left;
    if (weightedPrevious + (counter.current + 1) * ttl <= limit * ttl) {
      counter.current += 1;
      const hits = counter.current + ceilDiv(weightedPrevious, ttl);
      return { totalHits: hits, timeToExpire: headerSeconds(left), isBlocked: false, timeToBlockExpire: 0 };
    }
    return {
      totalHits: counter.current + 1 + ceilDiv(weightedPrevious, ttl),
      timeToExpire: headerSeconds(left),
      isBlocked: true,
      timeToBlockExpire: headerSeconds(
        msUntilOneMoreFits(counter.current, counter.previous, elapsed, ttl, limit),
      ),
    };
  }

  /** Counters whose window and the one after it have ended count nothing any more. */
  protected sweep(now: number): void {
    this.counters.sweep((counter) => now >= (counter.index + 2) * counter.ttl);
  }
}

// One hash per key and window: w (the window index), c (its count), p (the previous window's count).
// One key rather than one per window, so the script touches only the keys it is given (as Redis Cluster
// requires) and a window's roll-over is one write. The clock is Redis's own (TIME), so every instance
// agrees where a window's edge is whatever their clocks say; Redis 5 and later replicate the script's
// writes rather than the script, which a script reading TIME needs. The arithmetic is
// MemorySlidingWindowStorage's (its comments say why). ARGV: the number of requests to count (a hot key's
// requests of one event-loop turn) and of a rider's keys (RUN_LUA, RedisWindowStorage), then a ttl and a
// limit per window. Each request
// is counted in turn, at the same instant, and like the fixed windows' script stops after its first
// refused window (count_requests, RedisWindowStorage); it answers for each window counted the hits, the
// milliseconds left in the window and, for the refused one, the milliseconds until one more request
// fits. Each hash is read once and written once.
const SLIDING_SCRIPT = `
local function floor_div(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
local function ceil_div(a, b)
  local q = floor_div(a, b)
  if q * b < a then q = q + 1 end
  return q
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local windows = {}
for i = 1, window_count do
  local key = KEYS[i]
  local ttl = tonumber(ARGV[2 * i + 1])
  local index = floor_div(now, ttl)
  local state = redis.call('HMGET', key, 'w', 'c', 'p')
  local seen = tonumber(state[1])
  local current, previous, rolled = 0, 0, true
  if seen and seen >= index then
    index, current, previous, rolled = seen, tonumber(state[2]), tonumber(state[3]), false
  elseif seen and seen == index - 1 then
    previous = tonumber(state[2])
  end
  local elapsed = math.max(0, now - index * ttl)
  windows[i] = { ttl = ttl, limit = tonumber(ARGV[2 * i + 2]), index = index, current = current,
                 previous = previous, rolled = rolled, elapsed = elapsed, left = ttl - elapsed, added = 0 }
end
local counts = count_requests(windows, function(w, counts)
  local ttl, limit, current, previous = w.ttl, w.limit, w.current, w.previous
  local weighted = previous * w.left
  counts[#counts + 1] = current + 1 + ceil_div(weighted, ttl)
  counts[#counts + 1] = w.left
  if weighted + (current + 1) * ttl <= limit * ttl then
    w.current = current + 1
    w.added = w.added + 1
    counts[#counts + 1] = 0
    return false
  end
  if limit < 1 then
    counts[#counts + 1] = w.left
  elseif limit - current - 1 >= 0 and previous > 0 then
    counts[#counts + 1] = ttl - floor_div((limit - current - 1) * ttl, previous) - w.elapsed
  else
    counts[#counts + 1] = w.left + math.max(0, ttl - floor_div((limit - 1) * ttl, current))
  end
  return true
end)
for i, w in ipairs(windows) do
  local key = KEYS[i]
  if w.added > 0 then
    if w.rolled then
      redis.call('HSET', key, 'w', w.index, 'c', w.current, 'p', w.previous)
      -- The counts matter until the next window ends.
      redis.call('PEXPIRE', key, w.ttl + w.left)
    else
      redis.call('HINCRBY', key, 'c', w.added)
    end
  end
end
return counts`;

/**
 * The same sliding windows in Redis, shared by every instance: one script counts all of a request's
 * windows in one round trip, atomically, so instances sharing a Redis let exactly the limit through.
 * Its keys differ from the fixed windows' (`gatehouse:rls:`), so switching RATE_LIMIT_WINDOW starts
 * every count afresh rather than misreading the other kind's.
 */
export class RedisSlidingWindowStorage extends RedisWindowStorage {
  constructor(redis: RedisClient, failureMode: 'open' | 'closed') {
    super(redis, failureMode, SELF_BATCHED_SCRIPTS.slidingWindows, SLIDING_SCRIPT, 'gatehouse:rls:');
  }

  protected readonly valuesPerWindow = 3;

  protected countsOf(answer: number[], windows: readonly WindowToCount[]): WindowCount[] {
    const counts: WindowCount[] = [];
    for (let i = 0; i < answer.length; i += 3) {
      const hits = answer[i];
      const isBlocked = hits > windows[i / 3].limit;
      counts.push({
        totalHits: hits,
        timeToExpire: headerSeconds(answer[i + 1]),
        isBlocked,
        timeToBlockExpire: isBlocked ? headerSeconds(answer[i + 2]) : 0,
      });
    }
    return counts;
  }
}
