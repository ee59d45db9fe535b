import Redis, { type RedisOptions } from 'ioredis';
import { randomBytes } from 'node:crypto';
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
    // The first run reaches Redis only when the test lets it, after calls arrived over five more turns.
    const send = redis.sendCommand.bind(redis);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let firstOut!: () => void;
    const firstSent = new Promise<void>((resolve) => (firstOut = resolve));
    let runs = 0;
    const sent = jest.spyOn(redis, 'sendCommand').mockImplementation((command, ...rest) => {
      if (!command.name.startsWith('eval')) return send(command, ...rest);
      runs += 1;
      if (runs > 1) return send(command, ...rest);
      firstOut();
      return held.then(() => send(command, ...rest));
    });
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const answers = [storage.countWindows(windows)];
    await firstSent;
    for (let i = 0; i < 5; i++) {
      answers.push(storage.countWindows(windows), storage.countWindows(windows));
      await turn();
    }
    // Five turns, each with a flush of its own, and still only the run that is out.
    expect(runs).toBe(1);
    release();
    const counts = await Promise.all(answers);
    sent.mockRestore();
    expect(counts.map(([count]) => count.totalHits)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(runs).toBe(2);
  });

  it('counts only the calls made, none ahead: another instance counts on from the last of them', async () => {
    const storage = storageOf(client(url));
    const other = storageOf(client(url));
    const key = `key_${randomBytes(4).toString('hex')}`;
    // A high limit, where a storage counting a busy key's requests ahead would do it.
    const windows: WindowToCount[] = [
      { key, ttl: LONG_TTL, limit: 1_000_000, name: 'minute' },
      { key, ttl: LONG_TTL, limit: 60_000_000, name: 'hour' },
    ];
    for (let wave = 0; wave < 3; wave++)
      await Promise.all(Array.from({ length: 20 }, () => storage.countWindows(windows)));
    const [minute, hour] = await other.countWindows(windows);
    expect([minute.totalHits, hour.totalHits]).toEqual([61, 61]);
    // And the first instance goes to Redis too, counting on from there.
    const [again] = await storage.countWindows(windows);
    expect(again.totalHits).toBe(62);
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
