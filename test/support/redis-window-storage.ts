import Redis, { type RedisOptions } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { RateLimitErrorCode } from '../../src/rate-limits/rate-limits.errors';
import type { WindowBatchCounter, WindowToCount } from '../../src/rate-limits/window-counter';

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
