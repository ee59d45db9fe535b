import type { ThrottlerStorage } from '@nestjs/throttler';
import type { RedisClient } from '../redis/redis.connection';
import { RedisOutagePolicy } from './redis-outage';
import type { RideCarrier, WindowCount, WindowRide, WindowToCount } from './window-counter';

/** A Lua script defined on the connection, called with the number of keys first. */
type WindowScriptCall = (numberOfKeys: number, ...keysThenArgs: (string | number)[]) => Promise<number[]>;

/**
 * The most requests one script run counts: a run holds Redis for its length, so a flood of one key's
 * requests in one turn is split into runs of this many.
 */
const MAX_REQUESTS_PER_RUN = 500;

/**
 * Put before every storage's script: what a run counts and the loop that counts it, which `countGroup`
 * reads. ARGV[1] is the number of requests, ARGV[2] the number of keys that are a rider's (the last ones
 * of KEYS); the windows are the first `window_count` keys, window i's ttl and limit ARGV[2i + 1] and
 * ARGV[2i + 2], and a rider's arguments follow them. `count_requests(windows, count_window)` counts the
 * requests one after the other, each in every window in turn up to and including the first that refuses
 * it; for each request the answer holds the number of windows counted, then what
 * `count_window(window, counts)` appended for each (the storage's `valuesPerWindow` numbers), then the
 * rider's part when there is one (RideCarrier). `count_window` returns true when the window refused the
 * request.
 */
const RUN_LUA = `
local n = tonumber(ARGV[1])
local rider_keys = tonumber(ARGV[2])
local window_count = #KEYS - rider_keys
local rider = nil
if rider_keys > 0 then rider = begin_ride(window_count + 1, 2 * window_count + 3) end
local function count_requests(windows, count_window)
  local counts = {}
  for r = 1, n do
    local at = #counts + 1
    counts[at] = 0
    local passed = true
    for i = 1, #windows do
      counts[at] = i
      if count_window(windows[i], counts) then
        passed = false
        break
      end
    end
    if rider then rider.ride(counts, passed) end
  end
  if rider then rider.finish() end
  return counts
end
`;

/** The rider of a storage that carries none: a run never has rider keys. */
const NO_RIDER_LUA = `
local function begin_ride(first_key, first_arg) return nil end
`;

/** Requests waiting, in one turn of the event loop, for the same windows of the same key. */
interface WindowGroup {
  windows: readonly WindowToCount[];
  /** The keys and arguments of the group's rides (alike), or undefined: none rides. */
  ride?: WindowRide;
  waiting: {
    resolve: (counts: WindowCount[]) => void;
    reject: (error: unknown) => void;
    ride?: WindowRide;
  }[];
}

/**
 * What the Redis storages share, whichever way they count (fixed or sliding): one script call counts
 * every window of a request (keys under the storage's own prefix, a ttl and a limit per window), in one
 * round trip, atomically across instances; a Redis that cannot answer gets the outage policy (open or
 * closed). A subclass gives the script and reads its answer.
 *
 * The requests of one turn of the event loop that count the same windows (a hot key's: a service
 * verifying its callers thousands of times a second) share one call: the script counts them one after
 * the other, in the order they arrived, each up to its first spent window, exactly as that many calls
 * in a row would, and answers each its own counts. Alone, a request waits no longer than a
 * setImmediate. So a hot key costs Redis (which shares the machine's cores) one script run per turn, not
 * one per request. Script arguments: the number of requests, then a ttl and a limit per window; answer:
 * per request, the number of windows counted, then `valuesPerWindow` numbers for each.
 *
 * And a hot key has at most one run on its way at a time: the requests that arrive while it is out wait
 * for its answer and then go together, as the next run. A turn under load holds only the few requests
 * whose bodies arrived in it, so without this a hot key sent a run every turn, each costing this process
 * a write, a reply to parse and a script call's setup, and Redis a script run (a scratch loop of the
 * storage alone: about 59 µs of this process's CPU a request at 1 request a run, 4.7 at 16, 1.9 at 64).
 * Waiting adds at most one round trip to a request's latency, and only when its key already has one
 * open; a Redis that hangs fails the run out within the command's deadline (RedisConnection), and the
 * run waiting then goes at once and meets the same outage policy. The order is the arrival order still:
 * runs of one key go one after the other on the one connection. Every request is counted in Redis before
 * it is answered, so instances share each limit exactly and a Redis that fails meets the outage policy
 * at once.
 */
export abstract class RedisWindowStorage implements ThrottlerStorage, RideCarrier {
  private readonly outage: RedisOutagePolicy;
  private script: WindowScriptCall;
  private carries = false;
  /** By signature (countWindows): the requests not yet sent, of this turn or waiting for a run out. */
  private pending = new Map<string, WindowGroup>();
  /** Groups that reached MAX_REQUESTS_PER_RUN, sent at the next flush whatever is on its way. */
  private full: WindowGroup[] = [];
  /** Signatures with a run on its way to Redis: their pending group is sent when it is answered. */
  private readonly out = new Set<string>();
  private flushScheduled = false;

  /** How many numbers the script answers per window counted. */
  protected abstract readonly valuesPerWindow: number;

  /**
   * `command`: the name the script is defined under (one per storage kind); `lua`: the script, which
   * counts its requests with `count_requests` (RUN_LUA); `prefix`: its keys' prefix,
   * distinct per kind, so switching kinds never misreads the other kind's counts.
   */
  protected constructor(
    private readonly redis: RedisClient,
    failureMode: 'open' | 'closed',
    private readonly command: string,
    private readonly lua: string,
    private readonly prefix: string,
  ) {
    this.outage = new RedisOutagePolicy(failureMode);
    this.script = this.define(NO_RIDER_LUA);
  }

  /**
   * From now on, a request's ride (countWindows) goes in its windows' script run. Called once at start
   * (RateLimitStep), before any request is counted.
   */
  carry(riderLua: string): void {
    this.script = this.define(riderLua);
    this.carries = true;
  }

  private define(riderLua: string): WindowScriptCall {
    // The number of keys varies (numberOfKeys omitted): it is the first argument of every call.
    this.redis.defineCommand(this.command, { lua: `${riderLua}${RUN_LUA}${this.lua}` });
    const defined = (this.redis as unknown as Record<string, WindowScriptCall>)[this.command];
    return defined.bind(this.redis);
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

  countWindows(windows: readonly WindowToCount[], ride?: WindowRide): Promise<WindowCount[]> {
    // Same keys and the same limits: a limit changed by a key update meanwhile is a group of its own;
    // and the same ride, if any, so one run's rides share their keys and arguments.
    let signature = '';
    for (const { key, name, ttl, limit } of windows) signature += `${name}:${key} ${ttl} ${limit}\n`;
    // No rider, or a ride with no keys (its Lua would not run, so its part would not be in the answer).
    if (!this.carries || !ride?.keys.length) ride = undefined;
    if (ride) signature += `ride ${ride.keys.join(' ')} ${ride.args.join(' ')}`;
    return new Promise((resolve, reject) => {
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
      const group = this.pending.get(signature);
      if (!group) {
        this.pending.set(signature, { windows, ride, waiting: [{ resolve, reject, ride }] });
        return;
      }
      group.waiting.push({ resolve, reject, ride });
      if (group.waiting.length < MAX_REQUESTS_PER_RUN) return;
      this.full.push(group);
      this.pending.delete(signature);
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const full = this.full;
    this.full = [];
    for (const group of full) void this.countGroup(group);
    for (const [signature, group] of this.pending) {
      if (this.out.has(signature)) continue; // sent when the run on its way is answered (send)
      this.pending.delete(signature);
      void this.send(signature, group);
    }
  }

  /** Counts a signature's group, then sends the group that gathered behind it meanwhile, if any. */
  private async send(signature: string, group: WindowGroup): Promise<void> {
    this.out.add(signature);
    try {
      await this.countGroup(group);
    } finally {
      this.out.delete(signature);
      const next = this.pending.get(signature);
      if (next) {
        this.pending.delete(signature);
        void this.send(signature, next);
      }
    }
  }

  private async countGroup({ windows, ride, waiting }: WindowGroup): Promise<void> {
    const keys = windows.map(({ key, name }) => `${this.prefix}${name}:${key}`);
    const args = windows.flatMap(({ ttl, limit }) => [ttl, limit]);
    const rideKeys = ride?.keys ?? [];
    let answer: number[];
    try {
      answer = await this.script(
        keys.length + rideKeys.length,
        ...keys,
        ...rideKeys,
        waiting.length,
        rideKeys.length,
        ...args,
        ...(ride?.args ?? []),
      );
    } catch (error) {
      for (const { resolve, reject, ride: own } of waiting) {
        if (own) own.failed = true;
        try {
          resolve(this.outage.countsOf(windows, error as Error));
        } catch (refusal) {
          reject(refusal);
        }
      }
      return;
    }
    let at = 0;
    for (const { resolve, ride: own } of waiting) {
      const end = at + 1 + answer[at] * this.valuesPerWindow;
      const counts = this.countsOf(answer.slice(at + 1, end), windows);
      at = end;
      if (own) {
        // The rider's part: how many values, then those (none when a window refused the request).
        const values = answer[at];
        if (values > 0) own.answer = answer.slice(at + 1, at + 1 + values);
        at += 1 + values;
      }
      resolve(counts);
    }
  }

  /** One request's part of the script's answer as one count per window it counted, in order. */
  protected abstract countsOf(answer: number[], windows: readonly WindowToCount[]): WindowCount[];
}
