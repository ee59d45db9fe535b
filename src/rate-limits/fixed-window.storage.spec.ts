import { randomBytes } from 'node:crypto';
import {
  itAnswersWithoutRedis,
  itCarriesRides,
  itCountsOneTurnTogether,
  redisClientsOfSuite,
} from '../../test/support/redis-window-storage';
import {
  MemoryFixedWindowStorage,
  RedisFixedWindowStorage,
  type WindowBatchCounter,
  type WindowToCount,
} from './fixed-window.storage';

/** A key's two windows as the rate-limit step asks for them: 2 a minute, 10 an hour. */
function windowsOf(tracker: string): WindowToCount[] {
  return [
    { key: `default:${tracker}`, ttl: 60_000, limit: 2, name: 'default' },
    { key: `hour:${tracker}`, ttl: 3_600_000, limit: 10, name: 'hour' },
  ];
}

/** What both storages must answer for one key's windows, counted together. */
function describeBatchCounting(name: string, storageOf: () => WindowBatchCounter) {
  describe(`${name}: all of a key's windows in one call`, () => {
    it('counts every window, in order, with the time left in each', async () => {
      const counts = await storageOf().countWindows(windowsOf(`key_${randomBytes(4).toString('hex')}`));
      expect(counts).toEqual([
        { totalHits: 1, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 },
        { totalHits: 1, timeToExpire: 3600, isBlocked: false, timeToBlockExpire: 0 },
      ]);
    });

    it('stops at the first spent window, leaving the windows after it uncounted', async () => {
      const storage = storageOf();
      const windows = windowsOf(`key_${randomBytes(4).toString('hex')}`);
      await storage.countWindows(windows);
      await storage.countWindows(windows);
      const spent = await storage.countWindows(windows);
      expect(spent).toEqual([{ totalHits: 3, timeToExpire: 60, isBlocked: true, timeToBlockExpire: 60 }]);
      // The hour window counted the two requests that passed, not the refused one: this is its third.
      const [hour] = await storage.countWindows([windows[1]]);
      expect(hour.totalHits).toBe(3);
    });
  });
}

describeBatchCounting('in this process', () => new MemoryFixedWindowStorage());

const redisUrl = process.env.REDIS_URL;
(redisUrl ? describe : describe.skip)('in Redis (REDIS_URL)', () => {
  const client = redisClientsOfSuite();

  describeBatchCounting('in Redis', () => new RedisFixedWindowStorage(client(redisUrl!), 'closed'));

  itAnswersWithoutRedis(client, (redis, mode) => new RedisFixedWindowStorage(redis, mode), windowsOf);

  itCountsOneTurnTogether(client, redisUrl!, (redis) => new RedisFixedWindowStorage(redis, 'closed'));

  itCarriesRides(client, redisUrl!, (redis, mode = 'closed') => new RedisFixedWindowStorage(redis, mode));
});
