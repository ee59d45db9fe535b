import { expectProblem, PASSWORD, signInFrom, signUpOrganization } from './support/factories';
import { describeWithPostgres, HAS_SHARED_REDIS, sharedSecrets } from './support/instances';
import { ManualClock } from './support/manual-clock';
import { dropTestDatabase, startTestApp, TestApp } from './support/test-app';

const LOGIN_MAX_FAILURES = 3;
const ENV = { LOGIN_MAX_FAILURES: String(LOGIN_MAX_FAILURES), TRUST_PROXY: '1' };

let addressCounter = 0;
const newAddress = () => `198.51.100.${++addressCounter}`;

/** The seconds a 429 asks to wait, after checking it is one. */
const retryAfterOf = (res: Parameters<typeof expectProblem>[0]): number => {
  expectProblem(res, 429, 'too_many_login_attempts');
  expect(res.headers['retry-after']).toMatch(/^\d+$/);
  return Number(res.headers['retry-after']);
};

/**
 * The sign-in throttle (README, "login throttle"): failures are counted per account and address, per
 * address, and per account with a far higher ceiling, with growing delays instead of a lockout; an
 * attacker slows itself, not the account's owner. Time moves by a manual clock, not by waiting.
 */
describe('login throttle', () => {
  const clock = new ManualClock();
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: ENV, clock });
  });
  afterAll(() => t?.close());

  it('makes an attacker wait longer after each failure past the free ones, even with the right password', async () => {
    const owner = await signUpOrganization(t.http, 'Guessed');
    const attacker = newAddress();
    for (let i = 0; i < LOGIN_MAX_FAILURES; i++) {
      expectProblem(
        await signInFrom(t.http, attacker, owner.email, `guess-${i}`),
        401,
        'invalid_credentials',
      );
    }
    const waits: number[] = [];
    for (let round = 0; round < 3; round++) {
      const wait = retryAfterOf(await signInFrom(t.http, attacker, owner.email, 'guess-again'));
      // While waiting, not even the right password is checked from this address.
      expect(retryAfterOf(await signInFrom(t.http, attacker, owner.email, PASSWORD))).toBe(wait);
      waits.push(wait);
      clock.advance(wait * 1000);
      expectProblem(
        await signInFrom(t.http, attacker, owner.email, `late-guess-${round}`),
        401,
        'invalid_credentials',
      );
    }
    expect(waits).toEqual([10, 20, 40]);
    expect(retryAfterOf(await signInFrom(t.http, attacker, owner.email, 'guess-again'))).toBe(80);
  });

  it("lets the owner sign in from another address while the attacker's addresses wait", async () => {
    const owner = await signUpOrganization(t.http, 'Owner first');
    // Three addresses, each past its free failures for this account and waiting.
    for (const attacker of [newAddress(), newAddress(), newAddress()]) {
      for (let i = 0; i <= LOGIN_MAX_FAILURES; i++)
        await signInFrom(t.http, attacker, owner.email, `guess-${i}`);
      retryAfterOf(await signInFrom(t.http, attacker, owner.email, PASSWORD));
    }
    const res = await signInFrom(t.http, newAddress(), owner.email, PASSWORD).expect(200);
    expect(res.body.access_token).toEqual(expect.any(String));
  });

  it('throttles one address guessing across many accounts, and not the accounts from elsewhere', async () => {
    const attacker = newAddress();
    const victims = await Promise.all([1, 2, 3, 4].map((i) => signUpOrganization(t.http, `Sprayed ${i}`)));
    // Four times the free failures per address, spread so that no account from it reaches its own.
    for (let i = 0; i < 4 * LOGIN_MAX_FAILURES; i++) {
      const victim = victims[i % victims.length];
      expectProblem(
        await signInFrom(t.http, attacker, victim.email, `spray-${i}`),
        401,
        'invalid_credentials',
      );
    }
    const fresh = await signUpOrganization(t.http, 'Next in line');
    expect(retryAfterOf(await signInFrom(t.http, attacker, fresh.email, PASSWORD))).toBeGreaterThan(0);
    for (const victim of victims) await signInFrom(t.http, newAddress(), victim.email, PASSWORD).expect(200);
  });
});

describeWithPostgres('login throttle on two instances')(
  'login throttle on two instances sharing Redis',
  () => {
    const clock = new ManualClock();
    let a: TestApp;
    let b: TestApp;
    let databaseUrl: string | undefined;

    beforeAll(async () => {
      const env = { ...ENV, ...sharedSecrets() };
      a = await startTestApp({ env, clock });
      databaseUrl = a.databaseUrl;
      b = await startTestApp({ databaseUrl, env, clock });
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
      if (databaseUrl) await dropTestDatabase(databaseUrl);
    });

    (HAS_SHARED_REDIS ? it : it.skip)('counts the failures made on either instance together', async () => {
      const owner = await signUpOrganization(a.http, 'Two instances');
      const attacker = newAddress();
      // The free failures, spread over both instances: each alone has seen fewer.
      for (let i = 0; i < LOGIN_MAX_FAILURES; i++) {
        const http = i % 2 ? b.http : a.http;
        expectProblem(
          await signInFrom(http, attacker, owner.email, `guess-${i}`),
          401,
          'invalid_credentials',
        );
      }
      expect(retryAfterOf(await signInFrom(a.http, attacker, owner.email, 'next'))).toBe(10);
      expect(retryAfterOf(await signInFrom(b.http, attacker, owner.email, 'next'))).toBe(10);
      // A failure after the wait, on B, doubles the wait on A.
      clock.advance(10_000);
      expectProblem(await signInFrom(b.http, attacker, owner.email, 'late'), 401, 'invalid_credentials');
      expect(retryAfterOf(await signInFrom(a.http, attacker, owner.email, 'next'))).toBe(20);
    });
  },
);
