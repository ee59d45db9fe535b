import { expectProblem, PASSWORD, signInFrom, signUpOrganization } from '../support/factories';
import { pollUntil } from '../support/keys';
import { ManualClock } from '../support/manual-clock';
import { HAS_POSTGRES } from '../support/instances';
import { hasRedisServer, OwnRedis } from '../support/own-redis';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The sign-in throttle while Redis cannot be reached (README, "Login throttle"): failures are counted in
 * the process instead, so guessing is still slowed, never let through unthrottled, and a sign-in with the
 * right password still works once the wait is over; with Redis back they are counted there again, shared
 * by every instance. On a Redis server of the suite's own, never the shared one.
 */

const LOGIN_MAX_FAILURES = 3;
/** How long a poll waits for what must follow (Redis heard again): a deadline, never a bound on speed. */
const EVENTUALLY_MS = 60_000;

// Two instances share one database only on PostgreSQL.
(hasRedisServer() && HAS_POSTGRES ? describe : describe.skip)(
  'the login throttle through a Redis outage',
  () => {
    const clock = new ManualClock();
    let redis: OwnRedis | undefined;
    let t: TestApp | undefined;
    let b: TestApp | undefined;

    afterAll(async () => {
      await b?.close({ keepData: true });
      await t?.close();
      await redis?.close();
    });

    it('counts failures in the process while Redis is down, and in Redis again once it is back', async () => {
      redis = await OwnRedis.start();
      const env = { REDIS_URL: redis.url, LOGIN_MAX_FAILURES: String(LOGIN_MAX_FAILURES), TRUST_PROXY: '1' };
      t = await startTestApp({ clock, env });
      const http = t.http;
      const owner = await signUpOrganization(http, 'Guessed while Redis is down');

      await redis.stop();
      const attacker = '198.51.100.77';
      for (let i = 0; i < LOGIN_MAX_FAILURES; i++) {
        expectProblem(
          await signInFrom(http, attacker, owner.email, `guess-${i}`),
          401,
          'invalid_credentials',
        );
      }
      // Past the free failures: a wait, and not even the right password is checked meanwhile.
      const refused = await signInFrom(http, attacker, owner.email, PASSWORD);
      expectProblem(refused, 429, 'too_many_login_attempts');
      expect(refused.headers['retry-after']).toBe('10');
      clock.advance(10_000);
      await signInFrom(http, attacker, owner.email, PASSWORD).expect(200);

      // Redis back: counted there again, so a second instance on the same Redis refuses what the first
      // counted (a new address, so the process's counts above play no part).
      await redis.start();
      await pollUntil(
        () => http.get('/health/ready'),
        (res) => res.status === 200,
        { timeoutMs: EVENTUALLY_MS },
      );
      b = await startTestApp({ clock, databaseUrl: t.databaseUrl, env });
      const second = '198.51.100.78';
      for (let i = 0; i < LOGIN_MAX_FAILURES; i++) {
        expectProblem(await signInFrom(http, second, owner.email, `again-${i}`), 401, 'invalid_credentials');
      }
      expectProblem(await signInFrom(b.http, second, owner.email, PASSWORD), 429, 'too_many_login_attempts');
    });
  },
);
