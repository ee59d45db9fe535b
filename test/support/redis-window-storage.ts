import Redis, { type RedisOptions } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { RateLimitErrorCode } from '../../src/rate-limits/rate-limits.errors';
import type {
  RideCarrier,
  WindowBatchCounter,
  WindowCount,
  WindowRide,
  WindowToCount,
} from '../../src/rate-limits/window-counter';

/**
 * What the specs of the Redis window storages (fixed and sliding, src/rate-limits) share: their clients,
 * and what a storage answers when Redis cannot be reached.
 */

/**
 * Makes Redis clients for one describe block, all under one random key prefix (a run sees no other run's
 * counts), and quits them after it.
 */
export function redisClientsOfSuite(): (url: string, options?: RedisOptions) => Redis {
  const prefix = `test:${randomBytes(4).toString('hex')}:`;
  const clients: Redis[] = [];
  afterAll(() => Promise.all(clients.map((redis) => redis.quit().catch(() => redis.disconnect()))));
  return (url, options = {}) => {
    const redis = new Redis(url, { keyPrefix: prefix, ...options });
    clients.push(redis);
    return redis;
  };
}

/**
 * A storage on a Redis that cannot be reached answers every window with its whole budget when failing
 * open, and refuses with rate_limiter_unavailable when failing closed. `windowsOf` gives a key's two
 * windows.
 */
export function itAnswersWithoutRedis(
  client: (url: string, options?: RedisOptions) => Redis,
  storageOf: (redis: Redis, failureMode: 'open' | 'closed') => WindowBatchCounter,
  windowsOf: (tracker: string) => WindowToCount[],
): void {
  const unreachable = () => client('redis://127.0.0.1:1', { enableOfflineQueue: false, lazyConnect: true });

  it('answers every window with its whole budget when Redis cannot be reached and failing open', async () => {
    const counts = await storageOf(unreachable(), 'open').countWindows(windowsOf('key_open'));
    expect(counts.map((count) => [count.totalHits, count.isBlocked])).toEqual([
      [0, false],
      [0, false],
    ]);
  });

  it('refuses with rate_limiter_unavailable when Redis cannot be reached and failing closed', async () => {
    await expect(
      Promise.resolve(storageOf(unreachable(), 'closed').countWindows(windowsOf('key_closed'))),
    ).rejects.toMatchObject({ code: RateLimitErrorCode.RateLimiterUnavailable });
  });
}

/** Ten days: no window edge falls between a test's calls. */
const LONG_TTL = 864_000_000;

/**
 * The calls of one turn of the event loop for the same windows are one script run, and each is answered
 * what the same calls made one after another answer: counted in arrival order, each in every window up
 * to its first spent one. Two windows, the second with the lower limit, so requests are refused by each
 * in turn.
 */
export function itCountsOneTurnTogether(
  client: (url: string, options?: RedisOptions) => Redis,
  url: string,
  storageOf: (redis: Redis) => WindowBatchCounter,
): void {
  it('counts the calls of one turn in one script run, each answered as one call after another would be', async () => {
    const redis = client(url);
    const storage = storageOf(redis);
    const windowsOf = (tracker: string): WindowToCount[] => [
      { key: tracker, ttl: LONG_TTL, limit: 5, name: 'first' },
      { key: tracker, ttl: LONG_TTL, limit: 3, name: 'second' },
    ];
    const summary = (counts: WindowCount[]) =>
      counts.map(({ totalHits, isBlocked }) => ({ totalHits, isBlocked }));
    const calls = 8;

    const alone = windowsOf(`key_${randomBytes(4).toString('hex')}`);
    const oneAfterAnother: ReturnType<typeof summary>[] = [];
    for (let i = 0; i < calls; i++) oneAfterAnother.push(summary(await storage.countWindows(alone)));
    // The first three pass both windows, the next two are refused by the second, then by the first.
    expect(oneAfterAnother.map((counts) => counts.map(({ isBlocked }) => isBlocked))).toEqual([
      [false, false],
      [false, false],
      [false, false],
      [false, true],
      [false, true],
      [true],
      [true],
      [true],
    ]);

    const sent = jest.spyOn(redis, 'sendCommand');
    const together = windowsOf(`key_${randomBytes(4).toString('hex')}`);
    const answers = await Promise.all(Array.from({ length: calls }, () => storage.countWindows(together)));
    expect(answers.map(summary)).toEqual(oneAfterAnother);
    expect(sent.mock.calls.filter(([command]) => command.name.startsWith('eval'))).toHaveLength(1);
    sent.mockRestore();
  });

  it('sends the calls that arrive while a run is out as the next run, once it is answered', async () => {
    const redis = client(url);
    const storage = storageOf(redis);
    const windows: WindowToCount[] = [
      { key: `key_${randomBytes(4).toString('hex')}`, ttl: LONG_TTL, limit: 10_000, name: 'behind' },
    ];
    await storage.countWindows([{ ...windows[0], key: `${windows[0].key}_warm` }]);
    // The first run's answer is held back 50 ms, while calls arrive over five more turns.
    const send = redis.sendCommand.bind(redis);
    const runs: number[] = [];
    const sent = jest.spyOn(redis, 'sendCommand').mockImplementation((command, ...rest) => {
      if (command.name.startsWith('eval')) runs.push(Date.now());
      if (runs.length === 1 && command.name.startsWith('eval'))
        return sleep(50).then(() => send(command, ...rest));
      return send(command, ...rest);
    });
    const answers = [storage.countWindows(windows)];
    for (let turn = 0; turn < 5; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
      answers.push(storage.countWindows(windows), storage.countWindows(windows));
    }
    const counts = await Promise.all(answers);
    sent.mockRestore();
    expect(counts.map(([count]) => count.totalHits)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(runs).toHaveLength(2);
    expect(runs[1] - runs[0]).toBeGreaterThanOrEqual(45);
  });

  it('splits a flood of one turn into runs of 500, still counted in arrival order', async () => {
    const redis = client(url);
    const storage = storageOf(redis);
    const windows: WindowToCount[] = [
      { key: `key_${randomBytes(4).toString('hex')}`, ttl: LONG_TTL, limit: 10_000, name: 'flood' },
    ];
    await storage.countWindows([{ ...windows[0], key: `${windows[0].key}_warm` }]);
    const sent = jest.spyOn(redis, 'sendCommand');
    const answers = await Promise.all(Array.from({ length: 1001 }, () => storage.countWindows(windows)));
    expect(answers.map(([count]) => count.totalHits)).toEqual(Array.from({ length: 1001 }, (_, i) => i + 1));
    expect(sent.mock.calls.filter(([command]) => command.name.startsWith('eval'))).toHaveLength(3);
    sent.mockRestore();
  });
}

/**
 * A rider for the specs: each request let through adds ARGV[first_arg] to a running total kept in
 * KEYS[first_key] and answers the total after it; written once at the end of the run.
 */
const TOTAL_RIDER_LUA = `
local function begin_ride(first_key, first_arg)
  local key = KEYS[first_key]
  local step = tonumber(ARGV[first_arg])
  local total = tonumber(redis.call('GET', key) or '0')
  local added = 0
  local function ride(counts, passed)
    if not passed then
      counts[#counts + 1] = 0
      return
    end
    total = total + step
    added = added + step
    counts[#counts + 1] = 1
    counts[#counts + 1] = total
  end
  local function finish()
    if added > 0 then redis.call('INCRBY', key, added) end
  end
  return { ride = ride, finish = finish }
end
`;

/**
 * A ride (RideCarrier, window-counter.ts) goes in the windows' script run: each request every window let
 * through rides, in arrival order, with its answer its own; a request a window refused does not ride; a
 * storage that carries none leaves the ride alone; a run that fails marks its rides failed.
 */
export function itCarriesRides(
  client: (url: string, options?: RedisOptions) => Redis,
  url: string,
  storageOf: (redis: Redis, failureMode?: 'open' | 'closed') => RideCarrier,
): void {
  const windowsOf = (tracker: string): WindowToCount[] => [
    { key: tracker, ttl: LONG_TTL, limit: 3, name: 'ride' },
  ];
  const totalKey = () => `total_${randomBytes(4).toString('hex')}`;

  it('rides every request the windows let through, in arrival order, in the same script run', async () => {
    const redis = client(url);
    const storage = storageOf(redis);
    storage.carry(TOTAL_RIDER_LUA);
    const windows = windowsOf(`key_${randomBytes(4).toString('hex')}`);
    const total = totalKey();
    const rides: WindowRide[] = Array.from({ length: 5 }, () => ({ keys: [total], args: [7] }));
    // Loads the script into Redis first (ioredis sends EVALSHA, then EVAL once if Redis lacks it).
    await storage.countWindows(windowsOf(`key_${randomBytes(4).toString('hex')}`), {
      keys: [totalKey()],
      args: [1],
    });
    const sent = jest.spyOn(redis, 'sendCommand');
    const counts = await Promise.all(rides.map((ride) => storage.countWindows(windows, ride)));
    expect(sent.mock.calls.filter(([command]) => command.name.startsWith('eval'))).toHaveLength(1);
    sent.mockRestore();
    expect(counts.map(([count]) => count.isBlocked)).toEqual([false, false, false, true, true]);
    expect(rides.map((ride) => ride.answer)).toEqual([[7], [14], [21], undefined, undefined]);
    expect(rides.some((ride) => ride.failed)).toBe(false);
    expect(await redis.get(total)).toBe('21');
  });

  it('leaves a ride alone when it carries no rider', async () => {
    const redis = client(url);
    const storage = storageOf(redis);
    const total = totalKey();
    const ride: WindowRide = { keys: [total], args: [7] };
    const [count] = await storage.countWindows(windowsOf(`key_${randomBytes(4).toString('hex')}`), ride);
    expect(count.isBlocked).toBe(false);
    expect(ride).toEqual({ keys: [total], args: [7] });
    expect(await redis.get(total)).toBeNull();
  });

  it('marks the rides of a run that failed, and answers the windows by the outage policy', async () => {
    const storage = storageOf(
      client('redis://127.0.0.1:1', { enableOfflineQueue: false, lazyConnect: true }),
      'open',
    );
    storage.carry(TOTAL_RIDER_LUA);
    const ride: WindowRide = { keys: [totalKey()], args: [7] };
    const [count] = await storage.countWindows(windowsOf('key_unreachable'), ride);
    expect(count).toMatchObject({ totalHits: 0, isBlocked: false });
    expect(ride.failed).toBe(true);
    expect(ride.answer).toBeUndefined();
  });
}

/**
 * Slices (RedisWindowStorage): a key whose run counts two or more requests under a high limit has more
 * counted ahead in Redis, and its next requests are let through from them without a call, synchronously;
 * never where a window has less room than 1024, never for a ride, never past a window's end; and two
 * instances together still let no more than the limit through.
 */
export function itSlicesHotKeys(
  client: (url: string, options?: RedisOptions) => Redis,
  url: string,
  storageOf: (redis: Redis) => RideCarrier,
): void {
  const tracker = () => `key_${randomBytes(4).toString('hex')}`;
  const hits = (counts: WindowCount[]) => counts.map(({ totalHits }) => totalHits);
  /** Eight calls in one turn: a run of eight, which makes the key hot. */
  const burst = (storage: WindowBatchCounter, windows: WindowToCount[], ride?: () => WindowRide) =>
    Promise.all(Array.from({ length: 8 }, () => storage.countWindows(windows, ride?.())));

  it('lets a hot key through from a slice counted ahead in Redis, without a call, and asks for the next', async () => {
    const redis = client(url);
    const storage = storageOf(redis);
    const key = tracker();
    const windows: WindowToCount[] = [
      { key, ttl: LONG_TTL, limit: 100_000, name: 'minute' },
      { key, ttl: LONG_TTL, limit: 50_000, name: 'hour' },
    ];
    await burst(storage, windows);
    const sent = jest.spyOn(redis, 'sendCommand');
    const fromSlice = Array.from({ length: 32 }, () => storage.countWindows(windows));
    expect(sent).not.toHaveBeenCalled();
    sent.mockRestore();
    expect(fromSlice.every((counts) => Array.isArray(counts))).toBe(true);
    expect(fromSlice.map((counts) => hits(counts as WindowCount[]))).toEqual(
      Array.from({ length: 32 }, (_, i) => [9 + i, 9 + i]),
    );
    // Another instance sees the slice counted already.
    const other = storageOf(client(url));
    expect(hits(await other.countWindows(windows))).toEqual([41, 41]);
    // The slice used up, the next call goes to Redis again and brings a slice twice as large.
    const next = storage.countWindows(windows);
    expect(Array.isArray(next)).toBe(false);
    expect(hits(await next)).toEqual([42, 42]);
    const second = Array.from({ length: 64 }, () => storage.countWindows(windows));
    expect(second.every((counts) => Array.isArray(counts))).toBe(true);
    expect(Array.isArray(storage.countWindows(windows))).toBe(false);
  });

  it("counts a changed limit of the same key as other windows, never from the old limit's slice", async () => {
    const storage = storageOf(client(url));
    const key = tracker();
    // A new array each call, as each request makes its own.
    const windowsWith = (limit: number): WindowToCount[] => [
      { key, ttl: LONG_TTL, limit, name: 'minute' },
      { key, ttl: LONG_TTL, limit: 50_000, name: 'hour' },
    ];
    await burst(storage, windowsWith(100_000));
    // The same windows in new objects: the slice.
    expect(Array.isArray(storage.countWindows(windowsWith(100_000)))).toBe(true);
    // The key's minute limit changed (a PATCH): asked in Redis, counted under the new limit.
    const changed = storage.countWindows(windowsWith(9));
    expect(Array.isArray(changed)).toBe(false);
    const [minute] = await changed;
    expect(minute.isBlocked).toBe(true);
    // And back: the old limit's slice again, its counts continued (8 before it, then its second).
    const back = storage.countWindows(windowsWith(100_000));
    expect(Array.isArray(back)).toBe(true);
    expect(hits(back as WindowCount[])).toEqual([10, 10]);
  });

  it('grants no slice where a window has less room than 1024, nor to a ride', async () => {
    const storage = storageOf(client(url));
    const near = [{ key: tracker(), ttl: LONG_TTL, limit: 1_000, name: 'near' }];
    await burst(storage, near);
    expect(Array.isArray(storage.countWindows(near))).toBe(false);

    storage.carry(TOTAL_RIDER_LUA);
    const riding = [{ key: tracker(), ttl: LONG_TTL, limit: 100_000, name: 'riding' }];
    const ride = () => ({ keys: [`total_${randomBytes(4).toString('hex')}`], args: [1] });
    await burst(storage, riding, ride);
    expect(Array.isArray(storage.countWindows(riding, ride()))).toBe(false);
  });

  it('uses no slice past the end of its window', async () => {
    const storage = storageOf(client(url));
    const windows = [{ key: tracker(), ttl: 400, limit: 100_000, name: 'short' }];
    // Early in a window of Redis's clock (this machine's): sliding windows' edges fall on multiples of
    // the ttl, and a slice granted just before one would already be over.
    while (Date.now() % 400 > 100) await sleep(10);
    await burst(storage, windows);
    expect(Array.isArray(storage.countWindows(windows))).toBe(true);
    await sleep(450);
    const after = storage.countWindows(windows);
    expect(Array.isArray(after)).toBe(false);
    expect((await after)[0].isBlocked).toBe(false);
  });

  it('lets two instances with slices through no more than the limit together, and no fewer', async () => {
    const instances = [storageOf(client(url)), storageOf(client(url))];
    const windows = [{ key: tracker(), ttl: LONG_TTL, limit: 1_100, name: 'shared' }];
    let passed = 0;
    let sliced = 0;
    for (let turn = 0; turn < 35; turn++) {
      const calls = instances.flatMap((storage) =>
        Array.from({ length: 20 }, () => storage.countWindows(windows)),
      );
      sliced += calls.filter((counts) => Array.isArray(counts)).length;
      for (const [count] of await Promise.all(calls)) if (!count.isBlocked) passed += 1;
    }
    expect(sliced).toBeGreaterThan(0);
    expect(passed).toBe(1_100);
  });
}
