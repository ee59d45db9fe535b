import { createHmac } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { allPermissions } from '../src/roles/permissions';
import {
  bearer,
  createUser,
  expectProblem,
  PASSWORD,
  SignedUpOrganization,
  signIn,
  signUpOrganization,
  uniqueEmail,
} from './support/factories';
import { ManualClock } from './support/manual-clock';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The dashboard's sign-in (issue 15): an httpOnly, SameSite=Strict refresh cookie scoped to
 * /v1/auth/session that yields short-lived access tokens, each naming its session (`sid`) so the key
 * check refuses it once the session ends. Session times follow a ManualClock.
 */

const COOKIE = 'gatehouse_session';
const CSRF = { 'X-Gatehouse-CSRF': '1' };
const IDLE_MINUTES = 30;
const SESSION_HOURS = 12;
const MINUTE = 60_000;

interface Session {
  res: Response;
  /** The refresh token: the cookie's value. */
  cookie: string;
  token: string;
}

/** The gatehouse_session Set-Cookie line of a response. */
function setCookieOf(res: Response): string | undefined {
  const lines = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  return lines.find((line) => line.startsWith(`${COOKIE}=`));
}

/** The value a response sets the gatehouse_session cookie to. */
function cookieValueOf(res: Response): string {
  const line = setCookieOf(res);
  expect(line).toBeDefined();
  return line!.slice(COOKIE.length + 1, line!.indexOf(';'));
}

function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
}

describe('dashboard sessions', () => {
  const clock = new ManualClock(Date.parse('2030-03-01T09:00:00Z'));
  let t: TestApp;
  let admin: SignedUpOrganization;
  // Every body a session endpoint answered: none may hold a refresh token.
  const bodies: string[] = [];
  const cookies: string[] = [];

  const record = (res: Response): Response => {
    bodies.push(res.text ?? '');
    return res;
  };

  async function startSession(email: string, password = PASSWORD): Promise<Session> {
    const res = record(await t.http.post('/v1/auth/session').send({ email, password }).expect(200));
    const cookie = cookieValueOf(res);
    cookies.push(cookie);
    return { res, cookie, token: res.body.access_token };
  }

  const refresh = async (cookie: string, headers: Record<string, string> = CSRF): Promise<Response> =>
    record(await t.http.post('/v1/auth/session/refresh').set('Cookie', `${COOKIE}=${cookie}`).set(headers));

  const signOut = async (cookie: string, headers: Record<string, string> = CSRF): Promise<Response> =>
    record(await t.http.delete('/v1/auth/session').set('Cookie', `${COOKIE}=${cookie}`).set(headers));

  /** Refreshes, keeping the value the cookie rotates to, as a browser would. */
  const rotate = async (cookie: string): Promise<{ res: Response; cookie: string }> => {
    const res = await refresh(cookie);
    expect(res.status).toBe(200);
    const next = cookieValueOf(res);
    cookies.push(next);
    return { res, cookie: next };
  };

  function expectCleared(res: Response): void {
    const line = setCookieOf(res);
    expect(line).toMatch(new RegExp(`^${COOKIE}=;`));
    expect(line).toMatch(/; Max-Age=0(;|$)/);
    expect(line).toMatch(/; Path=\/v1\/auth\/session(;|$)/);
  }

  beforeAll(async () => {
    t = await startTestApp({
      clock,
      env: {
        DASHBOARD_IDLE_MINUTES: String(IDLE_MINUTES),
        DASHBOARD_SESSION_HOURS: String(SESSION_HOURS),
        // X-Forwarded-Proto from the test client decides `req.secure`.
        TRUST_PROXY: 'loopback',
      },
    });
    admin = await signUpOrganization(t.http, 'Dashboard');
  });
  afterAll(() => t?.close());

  describe('sign-in', () => {
    it('sets an HttpOnly, SameSite=Strict cookie scoped to /v1/auth/session and answers a working access token with the permissions', async () => {
      const { res, cookie, token } = await startSession(admin.email);
      expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'token_type', 'user']);
      expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: t.config.ACCESS_TOKEN_TTL_SECONDS });
      expect(res.body.user).toEqual({
        id: admin.userId,
        email: admin.email,
        name: 'Admin',
        role: 'administrator',
        permissions: [...allPermissions()].sort(),
      });
      expect(res.headers['cache-control']).toBe('no-store');

      const line = setCookieOf(res)!;
      expect(cookie).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(line).toMatch(/; HttpOnly(;|$)/);
      expect(line).toMatch(/; SameSite=Strict(;|$)/);
      expect(line).toMatch(/; Path=\/v1\/auth\/session(;|$)/);
      expect(line).toMatch(new RegExp(`; Max-Age=${SESSION_HOURS * 3600}(;|$)`));
      // Plain http here: a Secure cookie would never come back.
      expect(line).not.toMatch(/; Secure/);

      expect(claimsOf(token).sid).toMatch(/^ses_[0-9A-Za-z]{22}$/);
      const users = await t.http.get('/v1/users').set(bearer(token)).expect(200);
      expect(users.body.data.map((u: { id: string }) => u.id)).toContain(admin.userId);
    });

    it("answers only the user's own permissions", async () => {
      const viewer = await createUser(t.http, admin, 'viewer');
      const { res, token } = await startSession(viewer.email);
      expect(res.body.user).toMatchObject({ id: viewer.id, role: 'viewer' });
      // The core's reads a viewer holds, and nothing but reads (an extension may grant viewers its own).
      expect(res.body.user.permissions).toEqual(
        expect.arrayContaining([
          'agents:read',
          'deployments:read',
          'files:read',
          'tasks:read',
          'workflows:read',
        ]),
      );
      expect(res.body.user.permissions.filter((p: string) => !p.endsWith(':read'))).toEqual([]);
      expectProblem(await t.http.get('/v1/users').set(bearer(token)), 403, 'forbidden');
    });

    it('marks the cookie Secure when the request came over https', async () => {
      const res = await t.http
        .post('/v1/auth/session')
        .set('X-Forwarded-Proto', 'https')
        .send({ email: admin.email, password: PASSWORD })
        .expect(200);
      expect(setCookieOf(res)).toMatch(/; Secure(;|$)/);
    });

    it('refuses a wrong password or an unknown email as POST /v1/auth/token does, and sets no cookie', async () => {
      for (const body of [
        { email: admin.email, password: 'not-the-password' },
        { email: uniqueEmail('nobody'), password: PASSWORD },
      ]) {
        const res = record(await t.http.post('/v1/auth/session').send(body));
        expectProblem(res, 401, 'invalid_credentials');
        expect(setCookieOf(res)).toBeUndefined();
        expect(res.text).not.toContain(body.password);
      }
      expectProblem(await t.http.post('/v1/auth/session').send({ email: 'x' }), 400, 'validation_failed');
    });

    it('refuses a sign-in posted from another origin (403 csrf_check_failed)', async () => {
      const res = await t.http
        .post('/v1/auth/session')
        .set('Origin', 'https://evil.example')
        .send({ email: admin.email, password: PASSWORD });
      expectProblem(res, 403, 'csrf_check_failed');
      expect(setCookieOf(res)).toBeUndefined();
    });
  });

  describe('refresh', () => {
    it('answers a fresh access token for the cookie with the CSRF header', async () => {
      const session = await startSession(admin.email);
      const res = await refresh(session.cookie);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'token_type', 'user']);
      expect(res.body.user.id).toBe(admin.userId);
      expect(res.body.access_token).not.toBe(session.token);
      expect(claimsOf(res.body.access_token).sid).toBe(claimsOf(session.token).sid);
      expect(res.headers['cache-control']).toBe('no-store');
      await t.http.get('/v1/users').set(bearer(res.body.access_token)).expect(200);
    });

    it('rotates the cookie on every refresh: a new value, same attributes, Max-Age what is left of the cap', async () => {
      const session = await startSession(admin.email);
      clock.advance(10 * MINUTE);
      const res = await refresh(session.cookie);
      expect(res.status).toBe(200);
      const line = setCookieOf(res)!;
      expect(line).toBeDefined();
      const rotated = cookieValueOf(res);
      cookies.push(rotated);
      expect(rotated).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(rotated).not.toBe(session.cookie);
      expect(line).toMatch(/; HttpOnly(;|$)/);
      expect(line).toMatch(/; SameSite=Strict(;|$)/);
      expect(line).toMatch(/; Path=\/v1\/auth\/session(;|$)/);
      expect(line).toMatch(new RegExp(`; Max-Age=${SESSION_HOURS * 3600 - 10 * 60}(;|$)`));

      // The new value refreshes (and is replaced in turn); the old one, once its grace is over, does not.
      const next = await refresh(rotated);
      expect(next.status).toBe(200);
      expect(cookieValueOf(next)).not.toBe(rotated);
    });

    it('refuses without the CSRF header, or with another value (403 csrf_check_failed), and keeps the session', async () => {
      const session = await startSession(admin.email);
      for (const headers of [{}, { 'X-Gatehouse-CSRF': '0' }] as Record<string, string>[]) {
        const res = await refresh(session.cookie, headers);
        expectProblem(res, 403, 'csrf_check_failed');
        expect(setCookieOf(res)).toBeUndefined();
      }
      expect((await refresh(session.cookie)).status).toBe(200);
    });

    it('refuses a foreign Origin (403) and accepts the server’s own', async () => {
      const session = await startSession(admin.email);
      const foreign = await refresh(session.cookie, {
        ...CSRF,
        Host: 'gatehouse.test',
        Origin: 'https://evil.example',
      });
      expectProblem(foreign, 403, 'csrf_check_failed');
      const ownOrigin = { ...CSRF, Host: 'gatehouse.test', Origin: 'http://gatehouse.test' };
      expect((await refresh(session.cookie, ownOrigin)).status).toBe(200);
      // Same host, another scheme: another origin.
      const otherScheme = { ...CSRF, Host: 'gatehouse.test', Origin: 'https://gatehouse.test' };
      expectProblem(await refresh(session.cookie, otherScheme), 403, 'csrf_check_failed');
    });

    it('answers 204 without a cookie (nobody signed in), and refuses an unknown one with 401 invalid_credentials, clearing it', async () => {
      const missing = await t.http.post('/v1/auth/session/refresh').set(CSRF);
      expect(missing.status).toBe(204);
      expect(missing.text).toBe('');
      expect(missing.headers['set-cookie']).toBeUndefined();
      // The CSRF header is still required, cookie or not.
      expectProblem(await t.http.post('/v1/auth/session/refresh'), 403, 'csrf_check_failed');
      const unknown = await refresh('A'.repeat(43));
      expectProblem(unknown, 401, 'invalid_credentials');
      expectCleared(unknown);
    });
  });

  describe('refresh-token rotation and reuse', () => {
    // How long a value a refresh replaced still yields a token (two tabs refreshing at once): README.
    const GRACE_MS = 5_000;

    it('a replayed old cookie ends the whole session: refused, every value and access token of it refused', async () => {
      const session = await startSession(admin.email);
      const other = await startSession(admin.email);
      const first = await rotate(session.cookie);
      const second = await rotate(first.cookie);
      clock.advance(GRACE_MS + 1);

      // Someone replays the value the first refresh replaced (stolen, say): the session is taken to be compromised.
      const replay = await refresh(session.cookie);
      expectProblem(replay, 401, 'session_expired');
      expectCleared(replay);

      // Signed out as a whole: the current value, and every access token it issued, whoever holds them.
      expectProblem(await refresh(second.cookie), 401, 'session_expired');
      for (const token of [session.token, first.res.body.access_token, second.res.body.access_token]) {
        expectProblem(await t.http.get('/v1/users').set(bearer(token)), 401, 'session_expired');
      }
      // Only that session: another sign-in of the same user goes on.
      await t.http.get('/v1/users').set(bearer(other.token)).expect(200);
      expect((await refresh(other.cookie)).status).toBe(200);
    });

    it('replaying any earlier value, not only the last one replaced, ends the session', async () => {
      const session = await startSession(admin.email);
      let current = session.cookie;
      for (let i = 0; i < 3; i++) current = (await rotate(current)).cookie;
      clock.advance(GRACE_MS + 1);
      expectProblem(await refresh(session.cookie), 401, 'session_expired');
      expectProblem(await refresh(current), 401, 'session_expired');
    });

    it(`two tabs refreshing at once with one cookie: each gets a token, one new cookie, and the session lives (grace ${GRACE_MS} ms)`, async () => {
      const session = await startSession(admin.email);
      const answers = await Promise.all([1, 2, 3].map(() => refresh(session.cookie)));
      expect(answers.map((res) => res.status)).toEqual([200, 200, 200]);
      for (const res of answers) {
        expect(claimsOf(res.body.access_token).sid).toBe(claimsOf(session.token).sid);
        expect(res.headers['cache-control']).toBe('no-store');
      }
      // One of them rotated the cookie; the others, within the grace, left it to that one.
      const rotatedBy = answers.filter((res) => setCookieOf(res) !== undefined);
      expect(rotatedBy).toHaveLength(1);
      const current = cookieValueOf(rotatedBy[0]);
      cookies.push(current);

      // Within the grace the replaced value still yields a token and leaves the cookie alone...
      clock.advance(GRACE_MS);
      const late = await refresh(session.cookie);
      expect(late.status).toBe(200);
      expect(setCookieOf(late)).toBeUndefined();
      await t.http.get('/v1/users').set(bearer(late.body.access_token)).expect(200);
      // ...and the session goes on with the new value.
      const next = await rotate(current);

      // Past the grace, the replaced value is a replay.
      clock.advance(1);
      expectProblem(await refresh(session.cookie), 401, 'session_expired');
      expectProblem(await refresh(next.cookie), 401, 'session_expired');
      expectProblem(
        await t.http.get('/v1/users').set(bearer(late.body.access_token)),
        401,
        'session_expired',
      );
    });

    it('signing out with a value a refresh replaced still ends the session', async () => {
      const session = await startSession(admin.email);
      const rotated = await rotate(session.cookie);
      clock.advance(GRACE_MS + 1);
      expect((await signOut(session.cookie)).status).toBe(204);
      expectProblem(await refresh(rotated.cookie), 401, 'session_expired');
      expectProblem(
        await t.http.get('/v1/users').set(bearer(rotated.res.body.access_token)),
        401,
        'session_expired',
      );
    });
  });

  describe('sign-out', () => {
    it('revokes the session: 204, the cookie cleared, refresh refused and its access token refused at once', async () => {
      const session = await startSession(admin.email);
      const other = await startSession(admin.email);
      const plainToken = await signIn(t.http, admin.email);
      await t.http.get('/v1/users').set(bearer(session.token)).expect(200);

      const res = await signOut(session.cookie);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expectCleared(res);

      const refused = await refresh(session.cookie);
      expectProblem(refused, 401, 'session_expired');
      expectCleared(refused);
      expectProblem(await t.http.get('/v1/users').set(bearer(session.token)), 401, 'session_expired');

      // Only that session ended: another sign-in of the user, and its ordinary tokens, still work.
      await t.http.get('/v1/users').set(bearer(plainToken)).expect(200);
      await t.http.get('/v1/users').set(bearer(other.token)).expect(200);
      expect((await refresh(other.cookie)).status).toBe(200);
    });

    it('needs the CSRF header (403, the session kept) and answers 204 without a session', async () => {
      const session = await startSession(admin.email);
      expectProblem(await signOut(session.cookie, {}), 403, 'csrf_check_failed');
      await t.http.get('/v1/users').set(bearer(session.token)).expect(200);

      const without = record(await t.http.delete('/v1/auth/session').set(CSRF));
      expect(without.status).toBe(204);
      expectCleared(without);
      expect((await signOut('A'.repeat(43))).status).toBe(204);
    });
  });

  describe('lifetime', () => {
    it('ends a session idle longer than DASHBOARD_IDLE_MINUTES; each refresh starts the idle time again', async () => {
      const session = await startSession(admin.email);
      clock.advance((IDLE_MINUTES - 1) * MINUTE);
      const first = await rotate(session.cookie);
      clock.advance((IDLE_MINUTES - 1) * MINUTE);
      const { res: last, cookie: current } = await rotate(first.cookie);
      await t.http.get('/v1/users').set(bearer(last.body.access_token)).expect(200);

      clock.advance((IDLE_MINUTES + 1) * MINUTE);
      // The access token has not expired by itself (tokens follow the real time): the session has.
      expectProblem(
        await t.http.get('/v1/users').set(bearer(last.body.access_token)),
        401,
        'session_expired',
      );
      const refused = await refresh(current);
      expectProblem(refused, 401, 'session_expired');
      expectCleared(refused);
    });

    it('ends a session at DASHBOARD_SESSION_HOURS after sign-in, however active', async () => {
      const session = await startSession(admin.email);
      const step = (IDLE_MINUTES - 5) * MINUTE;
      const cap = SESSION_HOURS * 60 * MINUTE;
      let elapsed = 0;
      let current = session.cookie;
      while (elapsed + step < cap) {
        clock.advance(step);
        elapsed += step;
        current = (await rotate(current)).cookie;
      }
      const last = await rotate(current);
      const token = last.res.body.access_token as string;
      clock.advance(cap - elapsed);
      expectProblem(await refresh(last.cookie), 401, 'session_expired');
      expectProblem(await t.http.get('/v1/users').set(bearer(token)), 401, 'session_expired');
    });

    it("ends a deactivated user's session: refresh 401, and it stays ended after reactivation", async () => {
      const developer = await createUser(t.http, admin, 'developer');
      const session = await startSession(developer.email);
      await t.http.post(`/v1/users/${developer.id}/deactivate`).set(admin.auth).expect(200);

      expectProblem(await t.http.get('/v1/agents').set(bearer(session.token)), 401, 'user_deactivated');
      const refused = await refresh(session.cookie);
      expectProblem(refused, 401, 'invalid_credentials');
      expectCleared(refused);
      expectProblem(
        await t.http.post('/v1/auth/session').send({ email: developer.email, password: PASSWORD }),
        401,
        'invalid_credentials',
      );

      await t.http.post(`/v1/users/${developer.id}/activate`).set(admin.auth).expect(200);
      expectProblem(await refresh(session.cookie), 401, 'session_expired');
      expectProblem(await t.http.get('/v1/agents').set(bearer(session.token)), 401, 'session_expired');
    });
  });

  describe('the refresh token', () => {
    it('never appears in a response body, and is stored only as its HMAC', async () => {
      const session = await startSession(admin.email);
      const rotated = await rotate(session.cookie);
      await signOut(rotated.cookie);

      expect(cookies.length).toBeGreaterThan(5);
      expect(bodies.length).toBeGreaterThan(10);
      for (const cookie of cookies) {
        expect(bodies.filter((body) => body.includes(cookie))).toEqual([]);
      }

      const hmac = (cookie: string): string =>
        createHmac('sha256', t.config.API_KEY_HASH_SECRET).update(cookie).digest('hex');
      const database = t.app.get(DataSource);
      const rows: Array<Record<string, unknown>> = await database.query(
        'SELECT * FROM dashboard_sessions WHERE user_id = $1',
        [admin.userId],
      );
      const row = rows.find((r) => r.refresh_hash === hmac(rotated.cookie));
      // The value the refresh replaced is kept as its HMAC too, for reuse detection.
      const retired: Array<Record<string, unknown>> = await database.query(
        'SELECT * FROM dashboard_session_retired_tokens WHERE session_id = $1',
        [claimsOf(session.token).sid],
      );
      expect(retired).toEqual([
        {
          refresh_hash: hmac(session.cookie),
          session_id: claimsOf(session.token).sid,
          retired_at: expect.any(Date),
        },
      ]);
      expect(row).toMatchObject({
        id: expect.stringMatching(/^ses_[0-9A-Za-z]{22}$/),
        organization_id: admin.organizationId,
        user_id: admin.userId,
        created_at: expect.any(Date),
        last_used_at: expect.any(Date),
        revoked_at: new Date(clock.now()),
      });
      const { created_at, expires_at } = row as { created_at: Date; expires_at: Date };
      expect(expires_at.getTime() - created_at.getTime()).toBe(SESSION_HOURS * 60 * MINUTE);
      const stored = JSON.stringify([
        rows,
        await database.query('SELECT * FROM dashboard_session_retired_tokens'),
      ]);
      for (const cookie of cookies) expect(stored).not.toContain(cookie);
    });
  });
});
