import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { createKey, pollUntil } from '../support/keys';
import { expectProblem, signUpOrganization } from '../support/factories';
import { hasRedisServer, OwnRedis } from '../support/own-redis';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Redis hangs (SIGSTOP of the suite's own redis-server: connections are still accepted, nothing is
 * answered, as a partition or a stuck server looks) and the service treats it as it treats a stopped
 * Redis: every command has a deadline, and a missed deadline opens the breaker, so later calls fail
 * at once. `open` serves, `closed` refuses with 503, readiness says so, each while Redis still hangs;
 * after SIGCONT limits are counted again. Never the shared Redis.
 *
 * No answer is timed: the deadline itself is configuration (REDIS_COMMAND_TIMEOUT_MS), and what a test
 * can hold on a loaded machine is the behaviour, an answer while Redis is still hung. A request that is
 * hung with it would get none until SIGCONT; the client gives up on it after GIVE_UP_MS, far past every
 * deadline, and the test fails on the missing answer.
 */

const RUNNABLE = hasRedisServer();
const HAS_POSTGRES = Boolean(process.env.GATEHOUSE_TEST_SERVER_URL);
if (!RUNNABLE) console.warn('redis-hang fault suite skipped: it needs redis-server.');

// A request with no answer after this long is hung with Redis (the command deadline is 0.5 s).
const GIVE_UP_MS = 30_000;
/** How long the tests wait for what must follow (a reconnect, a refusal): a deadline, never a bound. */
const EVENTUALLY_MS = 60_000;

const env = {
  TOKEN_SIGNING_SECRET: randomBytes(32).toString('hex'),
  API_KEY_HASH_SECRET: randomBytes(32).toString('hex'),
};

interface Timed {
  res?: Response;
  /** How long it took: printed, never asserted. */
  ms: number;
}

/** The response and how long it took; no response (cut off after GIVE_UP_MS) is reported, not thrown. */
async function timed(call: () => PromiseLike<Response>): Promise<Timed> {
  const started = Date.now();
  try {
    const res = await call();
    return { res, ms: Date.now() - started };
  } catch {
    return { ms: Date.now() - started };
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

(RUNNABLE ? describe : describe.skip)('a hung Redis', () => {
  it.each(['open', 'closed'] as const)(
    'RATE_LIMIT_FAILURE_MODE=%s: verify and readiness answer while it hangs, and limits count again after',
    async (mode) => {
      const own = await OwnRedis.start();
      let app: TestApp | undefined;
      try {
        app = await startTestApp({ env: { ...env, REDIS_URL: own.url, RATE_LIMIT_FAILURE_MODE: mode } });
        const http = app.http;
        const org = await signUpOrganization(http, 'Hang');
        const key = await createKey(http, org.auth, {
          role: 'viewer',
          type: 'service',
          rate_limit: { requests_per_minute: 1000 },
        });
        const metered = await createKey(http, org.auth, {
          role: 'viewer',
          type: 'service',
          credits: { remaining: 100 },
        });
        const before = await http.get('/v1/auth/verify').set(key.auth).expect(200);
        expect(before.headers['x-ratelimit-remaining']).toBe('999');
        expect((await http.get('/v1/auth/verify').set(metered.auth).expect(200)).body.credits_remaining).toBe(
          99,
        );
        expect((await http.get('/health/ready').expect(200)).body.details.redis.status).toBe('up');

        own.pause();
        // Paced over a few seconds (the pace is the breaker's, not a wait for anything): the first call
        // pays the deadline, later ones meet an open breaker and its probes.
        const rounds: { verify: Timed; credits: Timed; ready: Timed }[] = [];
        for (let round = 0; round < 6; round++) {
          rounds.push({
            verify: await timed(() => http.get('/v1/auth/verify').set(key.auth).timeout(GIVE_UP_MS)),
            credits: await timed(() => http.get('/v1/auth/verify').set(metered.auth).timeout(GIVE_UP_MS)),
            ready: await timed(() => http.get('/health/ready').timeout(GIVE_UP_MS)),
          });
          await sleep(400);
        }
        const latencies = rounds.map(({ verify, credits, ready }) => [verify.ms, credits.ms, ready.ms]);
        console.log(
          `Redis paused, ${mode} mode, ms per round [verify, verify with credits, ready]: ${JSON.stringify(latencies)}`,
        );
        // Every one answered while Redis was still hung (it resumes below), none cut off.
        expect(
          rounds.flatMap(({ verify, credits, ready }) => [verify, credits, ready]).every((r) => r.res),
        ).toBe(true);
        rounds.forEach(({ verify, credits, ready }, round) => {
          if (mode === 'open') {
            expect(verify.res!.status).toBe(200);
            expect(credits.res!.status).toBe(200);
            // Spent in the database meanwhile, one by one.
            expect(credits.res!.body.credits_remaining).toBe(98 - round);
            expect(ready.res!.status).toBe(200);
            expect(ready.res!.body.details.redis).toEqual({
              status: 'degraded',
              message: expect.any(String),
            });
          } else {
            expectProblem(verify.res!, 503, 'rate_limiter_unavailable');
            expectProblem(credits.res!, 503, 'rate_limiter_unavailable');
            expectProblem(ready.res!, 503, 'redis_unavailable');
            expect(ready.res!.body.checks.redis.status).toBe('down');
          }
        });

        own.resume();
        // Counted again: two requests in a row each take one from the window (uncounted, open mode reports
        // the whole budget left). Polled as a pair, so a minute window that rolls over between the two, or
        // a reconnect still under way, only means one more round.
        const remainingOf = (res: { headers: Record<string, string> }) =>
          Number(res.headers['x-ratelimit-remaining']);
        const counted = await pollUntil(
          async () => {
            const first = await http.get('/v1/auth/verify').set(key.auth);
            const second = await http.get('/v1/auth/verify').set(key.auth);
            return { first, second };
          },
          ({ first, second }) =>
            first.status === 200 &&
            second.status === 200 &&
            remainingOf(first) < 999 &&
            remainingOf(second) === remainingOf(first) - 1,
          { timeoutMs: EVENTUALLY_MS },
        );
        expect(counted.value.second.status).toBe(200);
        expect(remainingOf(counted.value.first)).toBeLessThan(999);
        expect(remainingOf(counted.value.second)).toBe(remainingOf(counted.value.first) - 1);
        expect((await http.get('/health/ready').expect(200)).body.details.redis.status).toBe('up');
        console.log(`Redis resumed, ${mode} mode: limits counted again after ${counted.elapsedMs} ms`);
      } finally {
        own.resume();
        await app?.close();
        await own.close();
      }
    },
  );

  it('an instance started while Redis hangs still starts, serves in open mode, and hears once Redis answers', async () => {
    const own = await OwnRedis.start();
    let app: TestApp | undefined;
    try {
      own.pause();
      // Bounded: without the start's own deadlines this never returned (the subscription waited for ever).
      app = await startTestApp({ env: { ...env, REDIS_URL: own.url, RATE_LIMIT_FAILURE_MODE: 'open' } });
      const org = await signUpOrganization(app.http, 'Started during a hang');
      const key = await createKey(app.http, org.auth, { role: 'viewer', type: 'service' });
      const served = await timed(() => app!.http.get('/v1/auth/verify').set(key.auth).timeout(GIVE_UP_MS));
      // Answered while Redis still hangs.
      expect(served.res?.status).toBe(200);

      own.resume();
      // Limits are counted once the client reconnects: the window reports less than its whole budget.
      const counted = await pollUntil(
        () => app!.http.get('/v1/auth/verify').set(key.auth),
        (res) => res.status === 200 && Number(res.headers['x-ratelimit-remaining']) < 1000,
        { timeoutMs: EVENTUALLY_MS },
      );
      expect(Number(counted.value.headers['x-ratelimit-remaining'])).toBeLessThan(1000);
      // Readiness follows within its own probe's time: polled, a lasting "degraded" is what fails.
      const ready = await pollUntil(
        () => app!.http.get('/health/ready'),
        (res) => res.status === 200 && res.body.details.redis.status === 'up',
        { timeoutMs: EVENTUALLY_MS },
      );
      expect(ready.value.body.details.redis.status).toBe('up');
    } finally {
      own.resume();
      await app?.close();
      await own.close();
    }
  });

  // Two instances on one database: PostgreSQL only.
  (HAS_POSTGRES ? it : it.skip)(
    'an instance whose invalidation subscriber hangs stops trusting its key cache: a key deleted elsewhere is refused while Redis still hangs',
    async () => {
      const own = await OwnRedis.start();
      let a: TestApp | undefined;
      let b: TestApp | undefined;
      try {
        const redisEnv = { ...env, REDIS_URL: own.url, RATE_LIMIT_FAILURE_MODE: 'open' };
        a = await startTestApp({ env: redisEnv });
        b = await startTestApp({ databaseUrl: a.databaseUrl, env: redisEnv });
        const org = await signUpOrganization(a.http, 'Hung bus');
        const doomed = await createKey(a.http, org.auth, { role: 'viewer', type: 'service' });
        // In B's cache now, for longer than a second, as a key in steady use is: once B knows it cannot
        // hear, the entry is reloaded at once. (The pause makes the entry older than the distrusted
        // cache's second; a loaded machine only makes it older.)
        await b.http.get('/v1/auth/verify').set(doomed.auth).expect(200);
        await sleep(1_100);
        await b.http.get('/v1/auth/verify').set(doomed.auth).expect(200);

        own.pause();
        await a.http.delete(`/v1/api-keys/${doomed.id}`).set(org.auth).timeout(GIVE_UP_MS).expect(204);
        // B trusts a cache entry it hears about for 5 minutes (key-cache.ts): a refusal within the
        // deadline, with Redis still hung, is B noticing that it cannot hear.
        const refused = await pollUntil(
          () => b!.http.get('/v1/auth/verify').set(doomed.auth).timeout(GIVE_UP_MS),
          (res) => res.status === 401,
          { timeoutMs: EVENTUALLY_MS, intervalMs: 50 },
        );
        expect(refused.value.status).toBe(401);
        expect(refused.value.body.code).toBe('invalid_credentials');
        console.log(`Redis paused: a key deleted on A was refused on B after ${refused.elapsedMs} ms`);
      } finally {
        own.resume();
        await b?.close();
        await a?.close();
        await own.close();
      }
    },
  );
});
