import Redis from 'ioredis';
import { once } from 'node:events';
import { watchHearing } from '../../src/cache-invalidation/hearing-watch';
import { hasRedisServer, OwnRedis } from '../support/own-redis';

/**
 * The invalidation subscriber's heartbeat (watchHearing): a Redis that hangs is noticed and the connection
 * dropped, so the bus reports deafness; a process that was off the CPU past the deadline while the PONG
 * waited in its socket (a loaded machine, a long garbage collection) is not taken for a hung Redis. Seen
 * under a parallel `npm run bench`, that false deafness cleared the key caches during a PostgreSQL outage,
 * and cached keys got 503 instead of their refusals. On a Redis server of the suite's own.
 */

const EVERY_MS = 50;
const DEADLINE_MS = 200;

/** A script that keeps Redis from answering anyone for 20 ms. */
const REDIS_BUSY_20_MS = `
  local start = redis.call('TIME')
  repeat local now = redis.call('TIME')
  until (now[1] - start[1]) * 1000000 + (now[2] - start[2]) > 20000
  return 1`;

/** Blocks this process, as the scheduler or a collection can: no timer, no socket is served meanwhile. */
function offTheCpu(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    /* busy */
  }
}

(hasRedisServer() ? describe : describe.skip)('the invalidation subscriber hearing Redis', () => {
  let redis: OwnRedis;
  let subscriber: Redis;
  let heartbeat: NodeJS.Timeout | undefined;

  beforeEach(async () => {
    redis = await OwnRedis.start();
    subscriber = new Redis(redis.url, {
      maxRetriesPerRequest: null,
      lazyConnect: true,
      disconnectTimeout: 0,
    });
    await subscriber.connect();
    await subscriber.subscribe('hearing-test');
  });
  afterEach(async () => {
    clearInterval(heartbeat);
    subscriber.disconnect();
    redis.resume();
    await redis.close();
  });

  /** `answered(n)` resolves once `n` more PINGs have been answered. */
  function pings(): { answered: (n: number) => Promise<void> } {
    const ping = subscriber.ping.bind(subscriber);
    let answered = 0;
    const waiting: { n: number; resolve: () => void }[] = [];
    subscriber.ping = ((...args: never[]) => {
      const reply = ping(...args);
      void reply.then(() => {
        answered += 1;
        for (const w of waiting.filter((w) => answered >= w.n)) w.resolve();
      });
      return reply;
    }) as typeof subscriber.ping;
    return {
      answered: (n) => new Promise((resolve) => waiting.push({ n: answered + n, resolve })),
    };
  }

  it('keeps the connection when the process, not Redis, missed the deadline', async () => {
    const counted = pings();
    let closed = false;
    subscriber.on('close', () => (closed = true));
    // The first PING the heartbeat sends meets a Redis busy for 20 ms (a script on another connection),
    // and the process leaves the CPU past the deadline before its loop reads sockets again: the PONG
    // arrives meanwhile and waits in the socket. The next timer phase then comes before that read.
    const busy = new Redis(redis.url);
    await busy.ping();
    const ping = subscriber.ping.bind(subscriber);
    let stalled = false;
    subscriber.ping = ((...args: never[]) => {
      if (!stalled) void busy.eval(REDIS_BUSY_20_MS, 0);
      const reply = ping(...args);
      if (!stalled) setImmediate(offTheCpu, DEADLINE_MS * 3);
      stalled = true;
      return reply;
    }) as typeof subscriber.ping;

    try {
      heartbeat = watchHearing(subscriber, EVERY_MS, DEADLINE_MS);
      await counted.answered(5);
    } finally {
      busy.disconnect();
    }

    expect({ stalled, closed, status: subscriber.status }).toEqual({
      stalled: true,
      closed: false,
      status: 'ready',
    });
  });

  it('drops the connection of a Redis that hangs, and hears again once it answers', async () => {
    heartbeat = watchHearing(subscriber, EVERY_MS, DEADLINE_MS);
    const closed = once(subscriber, 'close');
    redis.pause();
    await closed;
    expect(subscriber.status).not.toBe('ready');

    const ready = once(subscriber, 'ready');
    redis.resume();
    await ready;
    await expect(subscriber.ping()).resolves.toBeDefined();
  });
});
