import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createKey, pollUntil } from '../support/keys';
import { expectProblem, signUpOrganization } from '../support/factories';
import { hasRedisServer, OwnRedis } from '../support/own-redis';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Redis goes away under two instances on one PostgreSQL database: an instance that can no longer hear
 * invalidations stops trusting its key cache, so a key deleted on A is refused on B, outage or not;
 * once Redis is back, both work as before. Uses a Redis server of its own, never the shared one; needs
 * PostgreSQL (two instances cannot share an embedded database). The contract's second is not timed (a
 * loaded machine stretches it): B trusts a key it hears about for 5 minutes (key-cache.ts), so a refusal
 * within the polls' deadline is B no longer trusting its cache.
 */

/** How long a poll waits for what must follow: a deadline for a hang, never a bound on speed. */
const EVENTUALLY_MS = 60_000;

const RUNNABLE = Boolean(process.env.GATEHOUSE_TEST_SERVER_URL) && hasRedisServer();
const describeIfRunnable = RUNNABLE ? describe : describe.skip;
if (!RUNNABLE) console.warn('redis-outage fault suite skipped: it needs DATABASE_URL and redis-server.');

describeIfRunnable('a Redis outage under two instances', () => {
  const env = {
    TOKEN_SIGNING_SECRET: randomBytes(32).toString('hex'),
    API_KEY_HASH_SECRET: randomBytes(32).toString('hex'),
    RATE_LIMIT_FAILURE_MODE: 'open',
  };
  let redis: OwnRedis | undefined;
  let a: TestApp | undefined;
  let b: TestApp | undefined;

  afterAll(async () => {
    await b?.close();
    await a?.close();
    await redis?.close();
  });

  it('refuses a key deleted on one instance on the other within a second while Redis is down', async () => {
    redis = await OwnRedis.start();
    a = await startTestApp({ env: { ...env, REDIS_URL: redis.url } });
    b = await startTestApp({ databaseUrl: a.databaseUrl, env: { ...env, REDIS_URL: redis.url } });
    const org = await signUpOrganization(a.http, 'Outage');
    const doomed = await createKey(a.http, org.auth, { role: 'viewer', type: 'service' });
    const survivor = await createKey(a.http, org.auth, { role: 'viewer', type: 'service' });
    // Both keys are now in B's cache.
    await b.http.get('/v1/auth/verify').set(doomed.auth).expect(200);
    await b.http.get('/v1/auth/verify').set(survivor.auth).expect(200);

    await redis.stop();
    await a.http.delete(`/v1/api-keys/${doomed.id}`).set(org.auth).expect(204);
    const refused = await pollUntil(
      () => b!.http.get('/v1/auth/verify').set(doomed.auth),
      (res) => res.status === 401,
      { timeoutMs: EVENTUALLY_MS, intervalMs: 50 },
    );
    expect(refused.value.status).toBe(401);
    expect(refused.value.body.code).toBe('invalid_credentials');
    // Served all along (rate limits fail open), read through to the database.
    await b.http.get('/v1/auth/verify').set(survivor.auth).expect(200);

    await redis.start();
    // Hearing again: a revocation on A reaches B through Redis, within the second, as before.
    await pollUntil(
      () => b!.http.get('/v1/auth/verify').set(survivor.auth),
      (res) => res.status === 200 && res.headers['x-ratelimit-remaining'] !== undefined,
      { timeoutMs: EVENTUALLY_MS },
    );
    await a.http.delete(`/v1/api-keys/${survivor.id}`).set(org.auth).expect(204);
    const afterRecovery = await pollUntil(
      () => b!.http.get('/v1/auth/verify').set(survivor.auth),
      (res) => res.status === 401,
      { timeoutMs: EVENTUALLY_MS, intervalMs: 50 },
    );
    expect(afterRecovery.value.status).toBe(401);
  });

  it('stays ready (200, Redis degraded) and serves in open mode; is not ready and answers 503 in closed mode', async () => {
    const own = await OwnRedis.start();
    let open: TestApp | undefined;
    let closed: TestApp | undefined;
    try {
      open = await startTestApp({ env: { ...env, REDIS_URL: own.url } });
      closed = await startTestApp({
        databaseUrl: open.databaseUrl,
        env: { ...env, REDIS_URL: own.url, RATE_LIMIT_FAILURE_MODE: 'closed' },
      });
      const org = await signUpOrganization(open.http, 'Readiness');
      const key = await createKey(open.http, org.auth, { role: 'viewer', type: 'service' });
      const healthy = await open.http.get('/health/ready').expect(200);
      expect(healthy.body.details.redis.status).toBe('up');

      await own.stop();
      const degraded = await open.http.get('/health/ready');
      expect(degraded.status).toBe(200);
      expect(degraded.body).toMatchObject({
        status: 'ok',
        info: { database: { status: 'up' }, redis: { status: 'degraded' } },
        details: { redis: { status: 'degraded', message: expect.any(String) } },
      });
      await open.http.get('/v1/auth/verify').set(key.auth).expect(200);

      const notReady = await closed.http.get('/health/ready');
      expectProblem(notReady, 503, 'redis_unavailable');
      expect(notReady.body.checks).toMatchObject({ database: { status: 'up' }, redis: { status: 'down' } });
      const refused = await closed.http.get('/v1/auth/verify').set(key.auth);
      expect(refused.status).toBe(503);

      await own.start();
      await pollUntil(
        () => closed!.http.get('/health/ready'),
        (res) => res.status === 200,
        { timeoutMs: EVENTUALLY_MS },
      );
    } finally {
      await closed?.close();
      await open?.close();
      await own.close();
    }
  });

  it('keeps credits exact through a Redis outage and restart: spent in the database meanwhile, reseeded after', async () => {
    const own = await OwnRedis.start();
    let app: TestApp | undefined;
    let database: Client | undefined;
    try {
      app = await startTestApp({ env: { ...env, REDIS_URL: own.url } });
      database = new Client({ connectionString: app.databaseUrl });
      await database.connect();
      const org = await signUpOrganization(app.http, 'Credits');
      const key = await createKey(app.http, org.auth, { role: 'viewer', credits: { remaining: 10 } });
      const spend = async () =>
        (await app!.http.get('/v1/auth/verify').set(key.auth).expect(200)).body.credits_remaining;
      const rowBalance = async () =>
        Number(
          (await database!.query('SELECT credits_remaining FROM api_keys WHERE id = $1', [key.id])).rows[0]
            .credits_remaining,
        );

      for (const expected of [9, 8, 7, 6]) expect(await spend()).toBe(expected);
      // Spent in Redis, written back to the row shortly after (what a Redis restart would otherwise lose).
      expect((await pollUntil(rowBalance, (n) => n === 6, { timeoutMs: EVENTUALLY_MS })).value).toBe(6);

      await own.stop();
      expect(await spend()).toBe(5);
      expect(await spend()).toBe(4);
      expect(await rowBalance()).toBe(4);

      // Redis is back, empty: the balance is reseeded from the row and goes on where it was.
      await own.start();
      await pollUntil(
        () => app!.http.get('/health/ready'),
        (res) => res.status === 200 && res.body.details?.redis?.status === 'up',
        { timeoutMs: EVENTUALLY_MS },
      );
      expect(await spend()).toBe(3);
      const fromRedis = spawnSync(
        'redis-cli',
        ['-p', String(own.port), 'HGET', `${app!.config.REDIS_KEY_PREFIX}gatehouse:credits:${key.id}`, 'r'],
        {
          encoding: 'utf8',
        },
      );
      expect(fromRedis.stdout.trim()).toBe('3');
      for (const expected of [2, 1, 0]) expect(await spend()).toBe(expected);
      expectProblem(await app.http.get('/v1/auth/verify').set(key.auth), 429, 'credits_exhausted');
    } finally {
      await database?.end();
      await app?.close();
      await own.close();
    }
  });
});
