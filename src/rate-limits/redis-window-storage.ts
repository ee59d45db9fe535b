import type { ThrottlerStorage } from '@nestjs/throttler';
import type Redis from 'ioredis';
import { RedisOutagePolicy } from './redis-outage';
import {
  headerSeconds,
  type RideCarrier,
  type WindowCount,
  type WindowRide,
  type WindowToCount,
} from './window-counter';

/** A Lua script defined on the connection, called with the number of keys first. */
type WindowScriptCall = (numberOfKeys: number, ...keysThenArgs: (string | number)[]) => Promise<number[]>;

/**
 * The most requests one script run counts: a run holds Redis for its length, so a flood of one key's
 * requests in one turn is split into runs of this many.
 */
const MAX_REQUESTS_PER_RUN = 500;

/**
 * Slices are granted only where every window has room for this many more requests: a key whose limits
 * are a few hundred a minute (the default is 600) is counted request by request, as its headers and a
 * test across instances expect to the unit.
 */
const MIN_SLICED_ROOM = 1024;
/** A slice is at most this share of a window's room, so other instances still find the rest. */
const SLICE_SHARE = 16;
/** The first slice a hot key asks for; each one used up asks for twice as many, up to MAX_SLICE. */
const FIRST_SLICE = 32;
const MAX_SLICE = 4096;
/** How long an instance holds a slice at most (and so how stale its X-RateLimit-Remaining can be). */
const SLICE_MS = 1000;
/** Window signatures kept (one per key recently counted, see signatureOf) before the memo starts again. */
const MAX_SIGNATURES_KEPT = 10_000;

/**
 * Put before every storage's script: what a run counts and the loop that counts it, which `countGroup`
 * reads. ARGV[1] is the number of requests, ARGV[2] the number of keys that are a rider's (the last ones
 * of KEYS); the windows are the first `window_count` keys, window i's ttl and limit ARGV[2i + 1] and
 * ARGV[2i + 2], a rider's arguments follow them, and the last is the size of the slice asked for
 * (`grant_slice`, below; 0 for none). `count_requests(windows, count_window)` counts the
 * requests one after the other, each in every window in turn up to and including the first that refuses
 * it; for each request the answer holds the number of windows counted, then what
 * `count_window(window, counts)` appended for each (the storage's `valuesPerWindow` numbers), then the
 * rider's part when there is one (RideCarrier). `count_window` returns true when the window refused the
 * request. After every request's part, the answer ends with the slice granted (`grant_slice`).
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
-- A slice (RedisWindowStorage, "slices"): after the run's requests, up to ARGV[#ARGV] more requests
-- counted now in every window, to be let through by this instance alone. Only where every window has
-- room for at least ${MIN_SLICED_ROOM}, and never more than 1/${SLICE_SHARE} of the smallest room.
-- Appends the slice's size and, when there is one, \`take(window, size, counts)\`'s values per window.
local function grant_slice(windows, counts, room_of, take)
  local size = tonumber(ARGV[#ARGV])
  for i = 1, #windows do
    if size <= 0 then break end
    local room = room_of(windows[i])
    if room < ${MIN_SLICED_ROOM} then size = 0 else size = math.min(size, math.floor(room / ${SLICE_SHARE})) end
  end
  if size <= 0 then
    counts[#counts + 1] = 0
    return
  end
  counts[#counts + 1] = size
  for i = 1, #windows do take(windows[i], size, counts) end
end
`;

/** The rider of a storage that carries none: a run never has rider keys. */
const NO_RIDER_LUA = `
local function begin_ride(first_key, first_arg) return nil end
`;

/** Requests waiting, in one turn of the event loop, for the same windows of the same key. */
interface WindowGroup {
  /** countWindows's: the windows, their limits and the ride. */
  signature: string;
  windows: readonly WindowToCount[];
  /** The keys and arguments of the group's rides (alike), or undefined: none rides. */
  ride?: WindowRide;
  waiting: {
    resolve: (counts: WindowCount[]) => void;
    reject: (error: unknown) => void;
    ride?: WindowRide;
  }[];
}

/** A hot key's slice: requests counted ahead in Redis, let through here without asking (see below). */
interface Slice {
  /** Requests left in it. */
  left: number;
  /** Requests let through from it so far. */
  used: number;
  /** performance.now() from which it is not used any more. */
  until: number;
  /** Per window: its hits before the slice (the slice's k-th request has `base + k`) and when it ends. */
  bases: number[];
  ends: number[];
  /** How many requests it was asked for: the next one asks twice as many if it is used up in time. */
  size: number;
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
 * for its answer and then go together, as the next run, or, when the run brought a slice (below), are
 * let through from it without one. A turn under load holds only the few requests whose bodies arrived in
 * it, so without this a hot key sent a run every turn, each costing this process a write, a reply to
 * parse and a script call's setup, and Redis a script run (a scratch loop of the storage alone: about 59
 * µs of this process's CPU a request at 1 request a run, 4.7 at 16, 1.9 at 64). Waiting adds at
 * most one round trip to a request's latency, and only when its key already has one open; a Redis that
 * hangs fails the run out within the command's deadline (RedisConnection), and the run waiting then goes
 * at once and meets the same outage policy. The order is the arrival order still: runs of one key go
 * one after the other on the one connection.
 *
 * Slices. A key sending many requests at once under a high limit (a service verifying its callers)
 * would still cost a round trip per run. So a run of such a key also asks for a slice: Redis counts up
 * to `size` more requests in every window at once, atomically with the run, and this instance lets that
 * many of the key's next requests through without asking, synchronously, for at most SLICE_MS and
 * never past the end of a window. Two instances together still let through no more than the limit, as
 * the contract asks: a slice is counted before it is used. The costs, kept small on purpose:
 * - a slice is granted only where every window has room for MIN_SLICED_ROOM more requests, and is at
 *   most 1/SLICE_SHARE of the smallest room, so a limit of a few hundred (the default 600 a minute) is
 *   counted request by request, and near a limit every instance is back to asking for each request;
 * - requests of a slice that is not used (its key went quiet, or a window ended) were counted but never
 *   made: under a limit other instances reach, at most a slice's share is refused too early, until the
 *   window ends;
 * - `X-RateLimit-Remaining` from a slice counts this instance's requests exactly and other instances' as
 *   of when the slice was granted (at most SLICE_MS ago).
 * A key becomes hot when one run counts two or more of its requests; its first slice is FIRST_SLICE
 * requests, and each slice used up before it expires doubles the next one, up to MAX_SLICE; one that
 * expires unused halves it. A request with a ride (credits) never uses a slice: its credits go to Redis
 * anyway, in the same run. A slice outlives a Redis outage by at most SLICE_MS, whatever the outage
 * policy: its requests were counted before Redis went away.
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
  /** Hot keys' slices by signature (countWindows), kept a while after they expire for their size. */
  private readonly slices = new Map<string, Slice>();
  private slicesSweptAt = 0;
  /** The windows' signatures last made, by their first window's storage key (signatureOf). */
  private readonly signatures = new Map<string, { windows: WindowToCount[]; signature: string }>();

  /** How many numbers the script answers per window counted. */
  protected abstract readonly valuesPerWindow: number;

  /**
   * `command`: the name the script is defined under (one per storage kind); `lua`: the script, which
   * counts its requests with `count_requests` (RUN_LUA); `prefix`: its keys' prefix,
   * distinct per kind, so switching kinds never misreads the other kind's counts.
   */
  protected constructor(
    private readonly redis: Redis,
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

  countWindows(windows: readonly WindowToCount[], ride?: WindowRide): WindowCount[] | Promise<WindowCount[]> {
    // Same keys and the same limits: a limit changed by a key update meanwhile is a group of its own;
    // and the same ride, if any, so one run's rides share their keys and arguments.
    let signature = this.signatureOf(windows);
    // No rider, or a ride with no keys (its Lua would not run, so its part would not be in the answer).
    if (!this.carries || !ride?.keys.length) ride = undefined;
    if (ride) signature += `ride ${ride.keys.join(' ')} ${ride.args.join(' ')}`;
    else {
      const slice = this.slices.get(signature);
      if (slice && slice.left > 0) {
        const now = performance.now();
        if (now < slice.until) return fromSlice(slice, now);
      }
    }
    return new Promise((resolve, reject) => {
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
      const group = this.pending.get(signature);
      if (!group) {
        this.pending.set(signature, { signature, windows, ride, waiting: [{ resolve, reject, ride }] });
        return;
      }
      group.waiting.push({ resolve, reject, ride });
      if (group.waiting.length < MAX_REQUESTS_PER_RUN) return;
      this.full.push(group);
      this.pending.delete(signature);
    });
  }

  /**
   * The windows' part of a request's signature: the string made last time for the same windows (the same
   * keys, names, ttls and limits, in order), else a new one. Building it for every request, and hashing
   * the new string to look its slice up, was most of what a request served from a slice cost: 750–890 ns
   * a call against 125–180 with this (a scratch loop of `countWindows` on a hot key's slice, three runs
   * each). A kept string's hash is computed once, as the in-process storage's keys are (WindowCounters).
   */
  private signatureOf(windows: readonly WindowToCount[]): string {
    if (windows.length === 0) return '';
    const known = this.signatures.get(windows[0].key);
    if (known && sameWindows(known.windows, windows)) return known.signature;
    let signature = '';
    for (const { key, name, ttl, limit } of windows) signature += `${name}:${key} ${ttl} ${limit}\n`;
    // Bounded: past the bound it starts again, and each key's signature is made again on its next request.
    if (this.signatures.size >= MAX_SIGNATURES_KEPT) this.signatures.clear();
    this.signatures.set(windows[0].key, {
      windows: windows.map(({ key, name, ttl, limit }) => ({ key, name, ttl, limit })),
      signature,
    });
    return signature;
  }

  private flush(): void {
    this.flushScheduled = false;
    this.sweepSlices();
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
      await this.countGroup(group, this.sliceSizeFor(group, performance.now()));
    } finally {
      this.out.delete(signature);
      const next = this.pending.get(signature);
      if (next) {
        this.pending.delete(signature);
        // The slice the run just brought may let the requests that waited for it through at once.
        const rest = this.restAfterSlice(next);
        if (rest) void this.send(signature, rest);
      }
    }
  }

  /** Lets what it can of a group through from its key's live slice; the rest is still to be sent. */
  private restAfterSlice(group: WindowGroup): WindowGroup | undefined {
    const slice = group.ride ? undefined : this.slices.get(group.signature);
    const now = performance.now();
    if (!slice || slice.left === 0 || now >= slice.until) return group;
    const served = Math.min(slice.left, group.waiting.length);
    for (let i = 0; i < served; i++) group.waiting[i].resolve(fromSlice(slice, now));
    if (served === group.waiting.length) return undefined;
    return { ...group, waiting: group.waiting.slice(served) };
  }

  /**
   * How many requests a run asks Redis to count ahead for its key: none with a ride, or for a key not
   * hot (see the class's comment).
   */
  private sliceSizeFor({ signature, ride, waiting }: WindowGroup, now: number): number {
    if (ride) return 0;
    const last = this.slices.get(signature);
    const first = waiting.length >= 2 ? FIRST_SLICE : 0;
    if (!last) return first;
    if (last.left === 0) return Math.min(MAX_SLICE, last.size * 2);
    // Expired with requests left: the key slowed down.
    if (now >= last.until) return last.size >> 1 >= FIRST_SLICE ? last.size >> 1 : first;
    return last.size;
  }

  /** Keeps a granted slice: `answer` is its part of the run's answer, a base and ms left per window. */
  private keepSlice(
    signature: string,
    size: number,
    granted: number,
    answer: number[],
    sentAt: number,
  ): void {
    const bases: number[] = [];
    const ends: number[] = [];
    let until = sentAt + SLICE_MS;
    for (let i = 0; i < answer.length; i += 2) {
      bases.push(answer[i]);
      // From when the run was sent, which Redis's clock read later: the end is never placed too late.
      ends.push(sentAt + answer[i + 1]);
      until = Math.min(until, sentAt + answer[i + 1]);
    }
    this.slices.set(signature, { left: granted, used: 0, until, bases, ends, size });
  }

  /** Forgets slices expired a while ago (their keys went quiet), at most every few seconds. */
  private sweepSlices(): void {
    if (this.slices.size === 0) return;
    const now = performance.now();
    if (now - this.slicesSweptAt < 5000) return;
    this.slicesSweptAt = now;
    for (const [signature, slice] of this.slices) if (now - slice.until > 5000) this.slices.delete(signature);
  }

  private async countGroup(group: WindowGroup, sliceSize = 0): Promise<void> {
    const { windows, ride, waiting } = group;
    const keys = windows.map(({ key, name }) => `${this.prefix}${name}:${key}`);
    const args = windows.flatMap(({ ttl, limit }) => [ttl, limit]);
    const rideKeys = ride?.keys ?? [];
    const sentAt = performance.now();
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
        // The slice asked for is the last argument (grant_slice, RUN_LUA).
        sliceSize,
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
    const granted = answer[at];
    if (granted > 0) this.keepSlice(group.signature, sliceSize, granted, answer.slice(at + 1), sentAt);
  }

  /** One request's part of the script's answer as one count per window it counted, in order. */
  protected abstract countsOf(answer: number[], windows: readonly WindowToCount[]): WindowCount[];
}

/** Whether two requests count the same windows with the same limits, in the same order. */
function sameWindows(kept: readonly WindowToCount[], windows: readonly WindowToCount[]): boolean {
  if (kept.length !== windows.length) return false;
  for (let i = 0; i < kept.length; i++) {
    const a = kept[i];
    const b = windows[i];
    if (a.key !== b.key || a.name !== b.name || a.ttl !== b.ttl || a.limit !== b.limit) return false;
  }
  return true;
}

/** The next request of a live slice: counted in Redis already, so let through without asking. */
function fromSlice(slice: Slice, now: number): WindowCount[] {
  slice.left -= 1;
  slice.used += 1;
  const counts: WindowCount[] = [];
  for (let i = 0; i < slice.bases.length; i++) {
    counts.push({
      totalHits: slice.bases[i] + slice.used,
      timeToExpire: headerSeconds(slice.ends[i] - now),
      isBlocked: false,
      timeToBlockExpire: 0,
    });
  }
  return counts;
}
