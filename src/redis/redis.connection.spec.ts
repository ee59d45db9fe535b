import { randomBytes } from 'node:crypto';
import { RedisFixedWindowStorage } from '../rate-limits/fixed-window.storage';
import { RedisSlidingWindowStorage } from '../rate-limits/sliding-window.storage';
import { RedisConnection } from './redis.connection';
import { SELF_BATCHED_SCRIPTS } from './self-batched-scripts';

const url = process.env.REDIS_URL;

(url ? describe : describe.skip)('RedisConnection (REDIS_URL)', () => {
  it('sends the window scripts at once, outside auto-pipelining, and pipelines other commands', async () => {
    const connection = new RedisConnection({
      url,
      clusterNodes: undefined,
      commandTimeoutMs: 2000,
      keyPrefix: `test:${randomBytes(4).toString('hex')}:`,
    });
    await connection.onModuleInit();
    const client = connection.client!;
    try {
      // The storages define their scripts under the names the connection leaves out.
      new RedisFixedWindowStorage(client, 'open');
      new RedisSlidingWindowStorage(client, 'open');
      const scripts = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      for (const name of Object.values(SELF_BATCHED_SCRIPTS)) {
        // One window, one request, no rider: keys, then requests, rider keys, ttl and limit.
        const answered = scripts[name](1, `window:${name}`, 1, 0, 60_000, 10);
        expect({ name, queued: client.autoPipelineQueueSize }).toEqual({ name, queued: 0 });
        await answered;
      }
      // Anything else still waits for the turn's pipeline.
      const read = client.get('other');
      expect(client.autoPipelineQueueSize).toBe(1);
      await read;
    } finally {
      await connection.onApplicationShutdown();
    }
  });
});
