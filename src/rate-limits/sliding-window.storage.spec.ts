import fc from 'fast-check';
import type Redis from 'ioredis';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  itAnswersWithoutRedis,
  itCarriesRides,
  itCountsOneTurnTogether,
  redisClientsOfSuite,
} from '../../test/support/redis-window-storage';
import {
  MemorySlidingWindowStorage,
  msUntilOneMoreFits,
  RedisSlidingWindowStorage,
} from './sliding-window.storage';
import type { WindowCount, WindowToCount } from './window-counter';

const MINUTE = 60_000;
const HOUR = 3_600_000;
/** An instant at the start of an hour (so of a minute too): window edges fall on whole minutes from it. */
const HOUR_START = HOUR * 500_000;

class FakeTime {
  constructor(public current: number) {}
  now(): number {
    return this.current;
  }
}

const fresh = (prefix = 'key') => `${prefix}_${randomBytes(4).toString('hex')}`;

/** A key's two windows as the rate-limit step asks for them. */
function windowsOf(tracker: string, perMinute = 2, perHour = 10): WindowToCount[] {
  return [
    { key: `default:${tracker}`, ttl: MINUTE, limit: perMinute, name: 'default' },
    { key: `hour:${tracker}`, ttl: HOUR, limit: perHour, name: 'hour' },
  ];
}

/** The minute window alone, limit `limit`. */
const minuteOf = (tracker: string, limit: number): WindowToCount[] => [windowsOf(tracker, limit)[0]];

describe('MemorySlidingWindowStorage', () => {
  let time: FakeTime;
  let storage: MemorySlidingWindowStorage;
  beforeEach(() => {
    time = new FakeTime(HOUR_START + 15_000);
    storage = new MemorySlidingWindowStorage(time);
  });
  const count = (windows: WindowToCount[]): WindowCount[] => storage.countWindows(windows);
  const admitted = (windows: WindowToCount[], n: number): number => {
    let passed = 0;
    for (let i = 0; i < n; i++) if (!count(windows).some((c) => c.isBlocked)) passed += 1;
    return passed;
  };

  it('counts every window, in order, with the seconds left until each window ends', () => {
    expect(count(windowsOf(fresh()))).toEqual([
      { totalHits: 1, timeToExpire: 45, isBlocked: false, timeToBlockExpire: 0 },
      { totalHits: 1, timeToExpire: 3585, isBlocked: false, timeToBlockExpire: 0 },
    ]);
  });

  it('stops at the first spent window, and neither counts the refused request there nor after it', () => {
    const windows = windowsOf(fresh());
    count(windows);
    count(windows);
    const spent = count(windows);
    // 2 counted + the refused one; the next request fits once the minute's window has ended and half
    // of the next one has passed (2 weighted by the half still inside the span, plus 1, is 2).
    expect(spent).toEqual([{ totalHits: 3, timeToExpire: 45, isBlocked: true, timeToBlockExpire: 75 }]);
    expect(count(windows)).toEqual([spent[0]]);
    // The hour counted the two that passed, not the refusals: this is its third.
    const [hour] = count([windows[1]]);
    expect(hour.totalHits).toBe(3);
  });

  it('refuses the edge burst: a limit spent at the end of one window is still counted at the start of the next', () => {
    const windows = minuteOf(fresh(), 5);
    time.current = HOUR_START + 59_000;
    expect(admitted(windows, 5)).toBe(5);
    time.current = HOUR_START + MINUTE + 500;
    const refused = count(windows)[0];
    // 5 weighted by 59.5/60 plus this one: 6 rounded up. One fits once 5 * (60 - t) / 60 + 1 <= 5,
    // t = 12 s into the window: 11.5 s from now, 12 in whole seconds.
    expect(refused).toEqual({ totalHits: 6, timeToExpire: 60, isBlocked: true, timeToBlockExpire: 12 });
    expect(admitted(windows, 5)).toBe(0);

    time.current = HOUR_START + MINUTE + 11_999;
    expect(count(windows)[0].isBlocked).toBe(true);
    time.current = HOUR_START + MINUTE + 12_000;
    expect(count(windows)[0]).toEqual({
      totalHits: 5,
      timeToExpire: 48,
      isBlocked: false,
      timeToBlockExpire: 0,
    });
    expect(count(windows)[0].isBlocked).toBe(true);
  });

  it('reports the weighted count rounded up, so X-RateLimit-Remaining is what still fits', () => {
    const windows = minuteOf(fresh(), 10);
    time.current = HOUR_START + 30_000;
    admitted(windows, 4);
    // Half of the previous window's 4 is still inside the span: 2, plus 1 now.
    time.current = HOUR_START + MINUTE + 30_000;
    expect(count(windows)[0].totalHits).toBe(3);
    // A third of it: 4/3 rounds up to 2, plus 2.
    time.current = HOUR_START + MINUTE + 40_000;
    expect(count(windows)[0].totalHits).toBe(4);
    // Two windows later nothing of it is left.
    time.current = HOUR_START + 3 * MINUTE;
    expect(count(windows)[0].totalHits).toBe(1);
  });

  it('does not lock out a client that keeps retrying faster than its limit', () => {
    const windows = minuteOf(fresh(), 10);
    const perWindow = new Map<number, number>();
    // One request every 1.5 s (40 a minute against a limit of 10), for ten minutes.
    for (let t = 0; t < 10 * MINUTE; t += 1500) {
      time.current = HOUR_START + t;
      if (!count(windows)[0].isBlocked) {
        const window = Math.floor(t / MINUTE);
        perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
      }
    }
    expect(perWindow.get(0)).toBe(10);
    for (let window = 1; window < 10; window++) {
      expect(perWindow.get(window)).toBeGreaterThanOrEqual(8);
      expect(perWindow.get(window)).toBeLessThanOrEqual(10);
    }
  });

  it('counts a clock that stepped back in the window it last saw', () => {
    const windows = minuteOf(fresh(), 2);
    time.current = HOUR_START + MINUTE + 10_000;
    count(windows);
    time.current = HOUR_START + 50_000;
    expect(count(windows)[0]).toMatchObject({ totalHits: 2, isBlocked: false });
    expect(count(windows)[0].isBlocked).toBe(true);
  });

  it('applies a lowered limit to counts already made', () => {
    const tracker = fresh();
    time.current = HOUR_START + 10_000;
    admitted(minuteOf(tracker, 10), 6);
    const [refused] = count(minuteOf(tracker, 3));
    expect(refused).toMatchObject({ totalHits: 7, isBlocked: true });
    // Next window: 6 * (60 - t) / 60 + 1 <= 3 from t = 40 s on, 90 s from now.
    expect(refused.timeToBlockExpire).toBe(90);
  });
});

describe('msUntilOneMoreFits', () => {
  /** The sliding-window counter's rule: at `at` ms into the window, with these counts, one more fits. */
  const fits = (current: number, previous: number, at: number, ttl: number, limit: number) =>
    previous * (ttl - at) + (current + 1) * ttl <= limit * ttl;

  it('is the first millisecond at which one more request fits, with nothing else let through meanwhile', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 40 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (ttl, limit, current, previous, share) => {
          const elapsed = Math.floor(share * ttl);
          fc.pre(!fits(current, previous, elapsed, ttl, limit));
          const wait = msUntilOneMoreFits(current, previous, elapsed, ttl, limit);
          // Where (window and offset) a moment `ms` from now is, the counts rolled over at the edge.
          const fitsAfter = (ms: number) => {
            const at = elapsed + ms;
            return at < ttl
              ? fits(current, previous, at, ttl, limit)
              : fits(0, current, at - ttl, ttl, limit);
          };
          expect(wait).toBeGreaterThan(0);
          expect(wait).toBeLessThanOrEqual(2 * ttl - elapsed);
          expect(fitsAfter(wait)).toBe(true);
          expect(fitsAfter(wait - 1)).toBe(false);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

const redisUrl = process.env.REDIS_URL;
(redisUrl ? describe : describe.skip)('RedisSlidingWindowStorage (REDIS_URL)', () => {
  const client = redisClientsOfSuite();

  const storageOf = () => new RedisSlidingWindowStorage(client(redisUrl!), 'closed');
  /** Milliseconds into a window of `ttl` by Redis's clock, which the script reads. */
  const redisPhase = async (redis: Redis, ttl: number): Promise<number> => {
    const [seconds, micros] = await redis.time();
    return (Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)) % ttl;
  };
  const waitForPhase = async (redis: Redis, ttl: number, phase: number): Promise<void> => {
    const now = await redisPhase(redis, ttl);
    await sleep((phase - now + ttl) % ttl);
  };
  /** Past the next edge of a window of `ttl` when one is due within 2 s, so a test's requests share a window. */
  const awayFromEdge = async (redis: Redis, ttl: number): Promise<void> => {
    if ((await redisPhase(redis, ttl)) > ttl - 2000) await waitForPhase(redis, ttl, 10);
  };

  it('counts every window, in order, with the seconds left until each window ends', async () => {
    const counts = await storageOf().countWindows(windowsOf(fresh()));
    expect(counts.map(({ totalHits, isBlocked }) => ({ totalHits, isBlocked }))).toEqual([
      { totalHits: 1, isBlocked: false },
      { totalHits: 1, isBlocked: false },
    ]);
    expect(counts[0].timeToExpire).toBeGreaterThanOrEqual(1);
    expect(counts[0].timeToExpire).toBeLessThanOrEqual(60);
    expect(counts[1].timeToExpire).toBeLessThanOrEqual(3600);
  });

  it('stops at the first spent window, and neither counts the refused request there nor after it', async () => {
    const redis = client(redisUrl!);
    const storage = new RedisSlidingWindowStorage(redis, 'closed');
    const windows = windowsOf(fresh());
    await awayFromEdge(redis, MINUTE);
    await storage.countWindows(windows);
    await storage.countWindows(windows);
    const [spent, ...after] = await storage.countWindows(windows);
    expect(after).toEqual([]);
    expect(spent).toMatchObject({ totalHits: 3, isBlocked: true });
    // Past the end of this minute (timeToExpire), then half of the next: ttl + ttl / limit at most.
    expect(spent.timeToBlockExpire).toBeGreaterThan(30);
    expect(spent.timeToBlockExpire).toBeLessThanOrEqual(90);
    expect(spent.timeToBlockExpire).toBe(spent.timeToExpire + 30);
    await storage.countWindows(windows);
    const [hour] = await storage.countWindows([windows[1]]);
    expect(hour.totalHits).toBe(3);
  });

  it('keeps a window two windows long at most', async () => {
    const redis = client(redisUrl!);
    const tracker = fresh();
    await awayFromEdge(redis, MINUTE);
    await new RedisSlidingWindowStorage(redis, 'closed').countWindows(minuteOf(tracker, 5));
    const left = await redis.pttl(`gatehouse:rls:default:default:${tracker}`);
    expect(left).toBeGreaterThan(MINUTE);
    expect(left).toBeLessThanOrEqual(2 * MINUTE);
  });

  it("refuses the edge burst across a window's edge on Redis's clock", async () => {
    const redis = client(redisUrl!);
    const storage = new RedisSlidingWindowStorage(redis, 'closed');
    // Windows of 4 s: 5 requests 1 s before an edge, then 5 just after it, in the 800 ms where
    // 5 * (4000 - t) / 4000 + 1 > 5 still holds.
    const windows: WindowToCount[] = [{ key: fresh(), ttl: 4000, limit: 5, name: 'edge' }];
    const send = async (n: number) => {
      const answers: WindowCount[] = [];
      for (let i = 0; i < n; i++) answers.push((await storage.countWindows(windows))[0]);
      return answers;
    };
    await waitForPhase(redis, 4000, 3000);
    expect((await send(5)).map((c) => c.isBlocked)).toEqual(Array(5).fill(false));
    await waitForPhase(redis, 4000, 50);
    const after = await send(5);
    expect(after.map((c) => c.isBlocked)).toEqual(Array(5).fill(true));
    expect(after.map((c) => c.timeToBlockExpire)).toEqual(Array(5).fill(1));
    // Once 800 ms of the window have passed, one fits again (and a second not before 1600 ms).
    await waitForPhase(redis, 4000, 900);
    expect((await send(2)).map((c) => c.isBlocked)).toEqual([false, true]);
  });

  it('lets exactly the limit through across two instances sharing one Redis, requests racing', async () => {
    const a = new RedisSlidingWindowStorage(client(redisUrl!), 'closed');
    const redisOfB = client(redisUrl!);
    const b = new RedisSlidingWindowStorage(redisOfB, 'closed');
    await awayFromEdge(redisOfB, HOUR);
    const windows: WindowToCount[] = [{ key: fresh(), ttl: HOUR, limit: 25, name: 'hour' }];
    const answers = await Promise.all(
      Array.from({ length: 80 }, (_, i) => (i % 2 ? a : b).countWindows(windows)),
    );
    const passed = answers.filter(([count]) => !count.isBlocked);
    expect(passed).toHaveLength(25);
    // Each accepted request saw a count of its own: 1..25, each once.
    expect(passed.map(([count]) => count.totalHits).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
  });

  itAnswersWithoutRedis(
    client,
    (redis, mode) => new RedisSlidingWindowStorage(redis, mode),
    (tracker) => windowsOf(tracker),
  );

  itCountsOneTurnTogether(client, redisUrl!, (redis) => new RedisSlidingWindowStorage(redis, 'closed'));

  itCarriesRides(client, redisUrl!, (redis, mode = 'closed') => new RedisSlidingWindowStorage(redis, mode));
});
