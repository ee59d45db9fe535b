import { createHmac, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import {
  bearer,
  createUser,
  expectProblem,
  PASSWORD,
  signIn,
  signUpOrganization,
  uniqueEmail,
} from './support/factories';
import { startTestApp, TestApp } from './support/test-app';

const BOOTSTRAP_EMAIL = uniqueEmail('bootstrap');
const BOOTSTRAP_PASSWORD = 'bootstrap-admin-password';
// Small, so throttling is reached quickly. The per-address limit is four times this (12): this file
// makes fewer failed sign-ins than that on the shared instance, so the address itself is never blocked.
const LOGIN_MAX_FAILURES = 3;

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function signupBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    organization_name: `Org ${randomBytes(3).toString('hex')}`,
    email: uniqueEmail('founder'),
    password: PASSWORD,
    name: 'Founder',
    ...overrides,
  };
}

describe('auth', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        BOOTSTRAP_ADMIN_EMAIL: BOOTSTRAP_EMAIL,
        BOOTSTRAP_ADMIN_PASSWORD: BOOTSTRAP_PASSWORD,
        LOGIN_MAX_FAILURES: String(LOGIN_MAX_FAILURES),
      },
    });
  });
  afterAll(() => t.close());

  describe('bootstrap administrator', () => {
    it('is created from BOOTSTRAP_ADMIN_EMAIL/PASSWORD and can sign in as the only administrator', async () => {
      const token = await signIn(t.http, BOOTSTRAP_EMAIL, BOOTSTRAP_PASSWORD);
      const users = await t.http.get('/v1/users').set(bearer(token)).expect(200);
      expect(users.body.next_cursor).toBeNull();
      expect(users.body.data).toEqual([
        expect.objectContaining({ email: BOOTSTRAP_EMAIL, role: 'administrator', active: true }),
      ]);
      // Sign-in is by email, whatever its case.
      await signIn(t.http, BOOTSTRAP_EMAIL.toUpperCase(), BOOTSTRAP_PASSWORD);
    });

    it('is idempotent: instances started later on the same database create nothing and change nothing', async () => {
      const email = uniqueEmail('root');
      const password = 'first-boot-password';
      const first = await startTestApp({
        env: { BOOTSTRAP_ADMIN_EMAIL: email, BOOTSTRAP_ADMIN_PASSWORD: password },
      });
      const open: TestApp[] = [first];
      let firstClosed = false;

      // Another instance on the same database: alongside the others on PostgreSQL; on PGlite, which one
      // process at a time may open, after closing the previous instance but keeping its data.
      const bootAgain = async (env: Record<string, string>): Promise<TestApp> => {
        if (first.databaseUrl) {
          const next = await startTestApp({ databaseUrl: first.databaseUrl, dataDir: first.dataDir, env });
          open.push(next);
          return next;
        }
        const previous = open.pop()!;
        await previous.close({ keepData: true });
        if (previous === first) firstClosed = true;
        const next = await startTestApp({ dataDir: first.dataDir, env });
        open.push(next);
        return next;
      };

      try {
        const firstToken = await signIn(first.http, email, password);
        const before = await first.http.get('/v1/users').set(bearer(firstToken)).expect(200);
        expect(before.body.data).toHaveLength(1);
        const admin = before.body.data[0];
        expect(admin).toMatchObject({ email, role: 'administrator', active: true });

        // Same email, another password: the existing administrator is kept as it is.
        const second = await bootAgain({
          BOOTSTRAP_ADMIN_EMAIL: email,
          BOOTSTRAP_ADMIN_PASSWORD: 'second-password',
        });
        const secondToken = await signIn(second.http, email, password);
        const afterSecond = await second.http.get('/v1/users').set(bearer(secondToken)).expect(200);
        expect(afterSecond.body.data).toEqual([admin]);
        expectProblem(
          await second.http.post('/v1/auth/token').send({ email, password: 'second-password' }),
          401,
          'invalid_credentials',
        );

        // Another email: users exist, so no second organization or administrator appears.
        const otherEmail = uniqueEmail('other-root');
        const third = await bootAgain({
          BOOTSTRAP_ADMIN_EMAIL: otherEmail,
          BOOTSTRAP_ADMIN_PASSWORD: 'third-password',
        });
        expectProblem(
          await third.http.post('/v1/auth/token').send({ email: otherEmail, password: 'third-password' }),
          401,
          'invalid_credentials',
        );
        const thirdToken = await signIn(third.http, email, password);
        const afterThird = await third.http.get('/v1/users').set(bearer(thirdToken)).expect(200);
        expect(afterThird.body.data).toEqual([admin]);
        expect(afterThird.body.next_cursor).toBeNull();
      } finally {
        // The first instance owns the database and data directory: it is closed last.
        for (const instance of open.reverse()) {
          await instance.close(instance === first ? {} : { keepData: true });
        }
        if (firstClosed) rmSync(first.dataDir, { recursive: true, force: true });
      }
    });
  });

  describe('POST /v1/auth/token', () => {
    it('answers 200 {access_token, token_type: "Bearer", expires_in} and the token works', async () => {
      const res = await t.http
        .post('/v1/auth/token')
        .send({ email: BOOTSTRAP_EMAIL, password: BOOTSTRAP_PASSWORD })
        .expect(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'token_type']);
      expect(res.body.token_type).toBe('Bearer');
      expect(res.body.access_token).toMatch(JWT_SHAPE);
      expect(res.body.expires_in).toBe(t.config.ACCESS_TOKEN_TTL_SECONDS);
      await t.http.get('/v1/users').set(bearer(res.body.access_token)).expect(200);
    });

    it('refuses a wrong password and an unknown email alike: 401 invalid_credentials', async () => {
      const wrong = expectProblem(
        await t.http.post('/v1/auth/token').send({ email: BOOTSTRAP_EMAIL, password: 'not-the-password' }),
        401,
        'invalid_credentials',
      );
      const unknown = expectProblem(
        await t.http
          .post('/v1/auth/token')
          .send({ email: uniqueEmail('nobody'), password: BOOTSTRAP_PASSWORD }),
        401,
        'invalid_credentials',
      );
      // Nothing tells an unknown email from a known one.
      expect(unknown.detail).toBe(wrong.detail);
      expect(JSON.stringify(wrong)).not.toContain('not-the-password');
    });

    it('refuses a body that is not {email, password} with 400', async () => {
      const res = await t.http.post('/v1/auth/token').send({ email: 'not-an-email' });
      const problem = expectProblem(res, 400, 'validation_failed');
      expect(new Set(problem.errors!.map((e) => e.field))).toEqual(new Set(['email', 'password']));
    });

    it('throttles repeated failures for one email with 429 and Retry-After, even for the right password', async () => {
      const org = await signUpOrganization(t.http, 'Throttled');
      for (let i = 0; i < LOGIN_MAX_FAILURES; i++) {
        // The email's case does not matter: all count against the same account.
        const email = i % 2 ? org.email.toUpperCase() : org.email;
        expectProblem(
          await t.http.post('/v1/auth/token').send({ email, password: `wrong-password-${i}` }),
          401,
          'invalid_credentials',
        );
      }

      const throttled = await t.http
        .post('/v1/auth/token')
        .send({ email: org.email, password: 'wrong-again' });
      expectProblem(throttled, 429, 'too_many_login_attempts');
      const retryAfter = throttled.headers['retry-after'];
      expect(retryAfter).toMatch(/^\d+$/);
      expect(Number(retryAfter)).toBeGreaterThan(0);
      expect(Number(retryAfter)).toBeLessThanOrEqual(t.config.LOGIN_FAILURE_WINDOW_SECONDS);

      const correct = await t.http.post('/v1/auth/token').send({ email: org.email, password: PASSWORD });
      expectProblem(correct, 429, 'too_many_login_attempts');
      expect(correct.body.access_token).toBeUndefined();
      expect(correct.headers['retry-after']).toMatch(/^\d+$/);

      // Only that email is throttled.
      await signIn(t.http, BOOTSTRAP_EMAIL, BOOTSTRAP_PASSWORD);
    });
  });

  describe('POST /v1/auth/signup', () => {
    it('creates an organization with its administrator and answers a usable access token (201)', async () => {
      const body = signupBody({ email: `Founder-${randomBytes(4).toString('hex')}@Example.TEST` });
      const res = await t.http.post('/v1/auth/signup').send(body).expect(201);
      const email = (body.email as string).toLowerCase();

      expect(res.body).toEqual({
        organization: {
          id: expect.stringMatching(/^org_[0-9A-Za-z]{22}$/),
          name: body.organization_name,
          created_at: expect.stringMatching(ISO_DATE),
        },
        user: {
          id: expect.stringMatching(/^usr_[0-9A-Za-z]{22}$/),
          email,
          name: 'Founder',
          role: 'administrator',
          active: true,
          deactivated_at: null,
          created_at: expect.stringMatching(ISO_DATE),
          updated_at: expect.stringMatching(ISO_DATE),
        },
        access_token: expect.stringMatching(JWT_SHAPE),
        token_type: 'Bearer',
        expires_in: t.config.ACCESS_TOKEN_TTL_SECONDS,
      });
      expect(JSON.stringify(res.body)).not.toContain(PASSWORD);

      // The token acts as the new administrator, in the new organization only.
      const users = await t.http.get('/v1/users').set(bearer(res.body.access_token)).expect(200);
      expect(users.body.data.map((u: { id: string }) => u.id)).toEqual([res.body.user.id]);
      await t.http
        .post('/v1/teams')
        .set(bearer(res.body.access_token))
        .send({ name: 'Founders' })
        .expect(201);
      // And the password signs in.
      await signIn(t.http, email);
    });

    it('refuses an email already taken with 409 email_taken, whatever its case', async () => {
      const existing = await signUpOrganization(t.http, 'Taken');
      for (const email of [existing.email, existing.email.toUpperCase()]) {
        expectProblem(
          await t.http.post('/v1/auth/signup').send(signupBody({ email, password: 'another-password' })),
          409,
          'email_taken',
        );
      }
      // The existing account is untouched: its password still works and its organization has one user.
      const token = await signIn(t.http, existing.email);
      const users = await t.http.get('/v1/users').set(bearer(token)).expect(200);
      expect(users.body.data.map((u: { id: string }) => u.id)).toEqual([existing.userId]);
    });

    it('refuses an invalid body with 400 and the fields at fault', async () => {
      const res = await t.http
        .post('/v1/auth/signup')
        .send(signupBody({ organization_name: '', password: 'short', plan: 'enterprise' }));
      const problem = expectProblem(res, 400, 'validation_failed');
      expect(new Set(problem.errors!.map((e) => e.field))).toEqual(
        new Set(['organization_name', 'password', 'plan']),
      );
    });

    it('refuses a password over 72 bytes, which bcrypt would truncate (400)', async () => {
      const problem = expectProblem(
        await t.http.post('/v1/auth/signup').send(signupBody({ password: 'é'.repeat(37) })),
        400,
        'validation_failed',
      );
      expect(new Set(problem.errors!.map((e) => e.field))).toEqual(new Set(['password']));
    });

    it('refuses a NUL character in the organization name with 400 and keeps nothing', async () => {
      const body = signupBody({ organization_name: 'Nul\u0000Org' });
      const problem = expectProblem(
        await t.http.post('/v1/auth/signup').send(body),
        400,
        'validation_failed',
      );
      expect(problem.errors).toEqual([
        { field: 'organization_name', message: 'organization_name must not contain control characters' },
      ]);
      // Nothing half-made: the email is still free.
      await t.http
        .post('/v1/auth/signup')
        .send({ ...body, organization_name: 'Fine Org' })
        .expect(201);
    });

    it('answers 404 when ALLOW_SIGNUP is false, and creates nothing', async () => {
      const closed = await startTestApp({ env: { ALLOW_SIGNUP: 'false' } });
      try {
        const body = signupBody();
        expectProblem(await closed.http.post('/v1/auth/signup').send(body), 404, 'not_found');
        expectProblem(
          await closed.http.post('/v1/auth/token').send({ email: body.email, password: body.password }),
          401,
          'invalid_credentials',
        );
      } finally {
        await closed.close();
      }
    });
  });

  describe('access tokens', () => {
    it('refuses a token whose signature, payload or signing key was tampered with (401)', async () => {
      const org = await signUpOrganization(t.http, 'Tamper');
      const other = await signUpOrganization(t.http, 'Victim');
      await t.http.get('/v1/users').set(org.auth).expect(200);

      const [header, payload, signature] = org.token.split('.');
      const middle = Math.floor(signature.length / 2);
      const flipped = signature[middle] === 'A' ? 'B' : 'A';
      const badSignature = `${signature.slice(0, middle)}${flipped}${signature.slice(middle + 1)}`;

      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
      const encode = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
      // The other organization's administrator, with the original signature.
      const swappedPayload = encode({ ...claims, sub: other.userId, org: other.organizationId });
      // Correctly formed and signed, but with a key that is not the server's.
      const foreign = `${header}.${swappedPayload}`;
      const foreignSignature = createHmac('sha256', randomBytes(32)).update(foreign).digest('base64url');

      for (const token of [
        `${header}.${payload}.${badSignature}`,
        `${header}.${swappedPayload}.${signature}`,
        `${foreign}.${foreignSignature}`,
      ]) {
        expectProblem(await t.http.get('/v1/users').set(bearer(token)), 401, 'invalid_credentials');
      }
      // The genuine token is still fine.
      await t.http.get('/v1/users').set(org.auth).expect(200);
    });

    it('refuses an expired token with 401 token_expired', async () => {
      const org = await signUpOrganization(t.http, 'Expired');
      const [header, payload] = org.token.split('.');
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
      const past = Math.floor(Date.now() / 1000) - 3600;
      const expired = `${header}.${Buffer.from(JSON.stringify({ ...claims, iat: past - 900, exp: past })).toString('base64url')}`;
      const signature = createHmac('sha256', t.config.TOKEN_SIGNING_SECRET)
        .update(expired)
        .digest('base64url');
      expectProblem(
        await t.http.get('/v1/users').set(bearer(`${expired}.${signature}`)),
        401,
        'token_expired',
      );
    });

    it("stops a deactivated user's token at once; they cannot sign in until activated again", async () => {
      const org = await signUpOrganization(t.http, 'Deactivation');
      const member = await createUser(t.http, org, 'administrator');
      await t.http.get('/v1/users').set(member.auth).expect(200);

      const deactivated = await t.http.post(`/v1/users/${member.id}/deactivate`).set(org.auth).expect(200);
      expect(deactivated.body).toMatchObject({ id: member.id, active: false });

      const refused = await t.http.get('/v1/users').set(member.auth);
      expectProblem(refused, 401, 'user_deactivated');
      expect(refused.headers['www-authenticate']).toMatch(/^Bearer/);
      expectProblem(
        await t.http.post('/v1/auth/token').send({ email: member.email, password: PASSWORD }),
        401,
        'invalid_credentials',
      );

      const activated = await t.http.post(`/v1/users/${member.id}/activate`).set(org.auth).expect(200);
      expect(activated.body).toMatchObject({ id: member.id, active: true });
      const token = await signIn(t.http, member.email);
      await t.http.get('/v1/users').set(bearer(token)).expect(200);
    });
  });
});
