import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import {
  expectProblem,
  PASSWORD,
  sendAsIs,
  SignedUpOrganization,
  signUpOrganization,
  uniqueEmail,
} from './support/factories';
import { registeredRoutes } from './support/routes';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The request pipeline every route shares: request ids, problem+json errors, body parsing and
 * validation, the deny-by-default credential check and the database-unavailable answer.
 */

const GENERATED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every `{field, message}` of a validation problem; asserts their shape on the way. */
function fieldErrors(res: Response): Array<{ field: string; message: string }> {
  expect(Array.isArray(res.body.errors)).toBe(true);
  expect(res.body.errors.length).toBeGreaterThan(0);
  for (const error of res.body.errors) {
    expect(error).toEqual({ field: expect.stringMatching(/\S/), message: expect.stringMatching(/\S/) });
  }
  return res.body.errors;
}

const validSignup = (): Record<string, unknown> => ({
  organization_name: `Pipeline ${randomBytes(3).toString('hex')}`,
  email: uniqueEmail('pipeline'),
  password: PASSWORD,
  name: 'Pipeline Admin',
});

// Routes the contract makes public; everything else must refuse a request without a credential.
const PUBLIC_ROUTES = new Set([
  'POST /v1/auth/token',
  'POST /v1/auth/signup',
  // The dashboard's sign-in and its session cookie (dashboard-session suite), not a key or token.
  'POST /v1/auth/session',
  'POST /v1/auth/session/refresh',
  'DELETE /v1/auth/session',
  'GET /health/live',
  'GET /health/ready',
  // The server's index: its version and where its parts are (operations suite).
  'GET /',
  // Leak reports: a GitHub report is checked by its signature, and anyone may report a key (leaked-keys suite).
  'POST /v1/secret-scanning/github',
  'POST /v1/credentials/revoke',
  // Not a tenant route: the operator's METRICS_TOKEN, and 404 when it is unset (operations suite).
  'GET /metrics',
  // RFC 9728 metadata, read before a client holds any credential (mcp suite).
  'GET /.well-known/oauth-protected-resource/mcp',
  'GET /.well-known/oauth-protected-resource/v1',
  'GET /.well-known/oauth-protected-resource/a2a',
]);
const isDocumentationPath = (path: string): boolean =>
  path === '/docs' || path.startsWith('/docs/') || /^\/openapi\.(json|ya?ml)$/.test(path);

describe('request pipeline', () => {
  let t: TestApp;
  let org: SignedUpOrganization;

  beforeAll(async () => {
    t = await startTestApp();
    org = await signUpOrganization(t.http, 'Pipeline');
  });
  afterAll(() => t?.close());

  describe('X-Request-Id', () => {
    it.each([
      ['a success', () => t.http.get('/health/live'), 200],
      ['a 401', () => t.http.get('/v1/users'), 401],
      ['a 404', () => t.http.get('/v1/no-such-route'), 404],
      [
        'a malformed JSON body',
        () => t.http.post('/v1/auth/signup').set('Content-Type', 'application/json').send('{"email": '),
        400,
      ],
    ])('is on %s', async (_label, send, status) => {
      const res = await send();
      expect(res.status).toBe(status);
      expect(res.headers['x-request-id']).toMatch(GENERATED_REQUEST_ID);
      if (status >= 400) expect(res.body.request_id).toBe(res.headers['x-request-id']);
    });

    it('differs between requests', async () => {
      const [a, b] = await Promise.all([t.http.get('/health/live'), t.http.get('/health/live')]);
      expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
    });

    it('echoes a sane incoming id, in the header and in problem bodies', async () => {
      const incoming = `trace-${randomBytes(6).toString('hex')}.span:42_A`;
      const ok = await t.http.get('/health/live').set('X-Request-Id', incoming).expect(200);
      expect(ok.headers['x-request-id']).toBe(incoming);

      const unauthorized = await t.http.get('/v1/users').set('X-Request-Id', incoming);
      expectProblem(unauthorized, 401, 'missing_credentials');
      expect(unauthorized.body.request_id).toBe(incoming);

      const missing = await t.http.get('/v1/nothing-here').set('X-Request-Id', incoming);
      expectProblem(missing, 404, 'not_found');
      expect(missing.body.request_id).toBe(incoming);
    });

    it.each([
      ['containing spaces', 'my request id'],
      ['300 characters long', 'a'.repeat(300)],
      ['containing markup and quotes', '<script>"x"</script>'],
      ['containing a CRLF-like escape', 'abc\\r\\ninjected: 1'],
    ])('replaces a junk incoming id %s', async (_label, junk) => {
      const res = await t.http.get('/v1/users').set('X-Request-Id', junk);
      expectProblem(res, 401, 'missing_credentials');
      const id = res.headers['x-request-id'];
      expect(id).not.toBe(junk);
      expect(id).toMatch(GENERATED_REQUEST_ID);
      expect(res.body.request_id).toBe(id);
    });
  });

  describe('body parsing and validation', () => {
    it('answers malformed JSON with 400 malformed_json', async () => {
      const res = await sendAsIs(t.http.post('/v1/auth/signup'), '{"organization_name": "x", "email": ');
      expectProblem(res, 400, 'malformed_json');
    });

    it('answers malformed JSON with 400 on a guarded route too', async () => {
      const res = await sendAsIs(t.http.post('/v1/users').set(org.auth), '{not json}');
      expectProblem(res, 400, 'malformed_json');
    });

    it('refuses an unknown body field, naming it', async () => {
      const res = await t.http.post('/v1/auth/signup').send({ ...validSignup(), is_superuser: true });
      expectProblem(res, 400, 'validation_failed');
      const errors = fieldErrors(res);
      expect(errors.map((e) => e.field)).toEqual(['is_superuser']);
    });

    it('refuses an unknown field on a guarded route, naming it', async () => {
      const res = await t.http
        .post('/v1/users')
        .set(org.auth)
        .send({ email: uniqueEmail('dev'), password: PASSWORD, name: 'Dev', role: 'developer', admin: 1 });
      expectProblem(res, 400, 'validation_failed');
      expect(fieldErrors(res).map((e) => e.field)).toEqual(['admin']);
    });

    it('refuses wrong types, naming every offending field', async () => {
      const res = await t.http.post('/v1/auth/signup').send({
        organization_name: 42,
        email: ['someone@example.test'],
        password: 12345678,
        name: { first: 'Ada' },
      });
      expectProblem(res, 400, 'validation_failed');
      const fields = new Set(fieldErrors(res).map((e) => e.field));
      expect([...fields].sort()).toEqual(['email', 'name', 'organization_name', 'password']);
    });

    it('refuses missing required fields, naming them', async () => {
      const res = await t.http.post('/v1/auth/signup').send({ email: uniqueEmail() });
      expectProblem(res, 400, 'validation_failed');
      const fields = new Set(fieldErrors(res).map((e) => e.field));
      expect(fields).toEqual(new Set(['organization_name', 'password', 'name']));
    });

    it('validates a JSON body that is not an object', async () => {
      const res = await t.http.post('/v1/auth/signup').set('Content-Type', 'application/json').send('[1, 2]');
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.request_id).toBe(res.headers['x-request-id']);
    });

    it.each([
      ['not a number', 'abc'],
      ['below 1', '0'],
      ['above 100', '101'],
    ])('refuses a list limit that is %s', async (_label, limit) => {
      const res = await t.http.get('/v1/users').query({ limit }).set(org.auth);
      expectProblem(res, 400, 'validation_failed');
      expect(fieldErrors(res).map((e) => e.field)).toContain('limit');
    });

    it('answers a JSON body over 1 MB with 413 payload_too_large', async () => {
      const body = JSON.stringify({ ...validSignup(), name: 'x'.repeat(1024 * 1024 + 16) });
      const res = await t.http.post('/v1/auth/signup').set('Content-Type', 'application/json').send(body);
      expectProblem(res, 413, 'payload_too_large');
    });

    it('reads a JSON body just under 1 MB (and then validates it)', async () => {
      const body = JSON.stringify({ ...validSignup(), name: 'x'.repeat(1000 * 1000) });
      expect(Buffer.byteLength(body)).toBeLessThan(1024 * 1024);
      const res = await t.http.post('/v1/auth/signup').set('Content-Type', 'application/json').send(body);
      expectProblem(res, 400, 'validation_failed');
      expect(fieldErrors(res).map((e) => e.field)).toEqual(['name']);
    });

    it('answers a form body over 1 MB with 413 payload_too_large', async () => {
      const res = await sendAsIs(
        t.http.post('/v1/auth/token'),
        `email=a%40example.test&password=${'x'.repeat(1024 * 1024 + 16)}`,
        'application/x-www-form-urlencoded',
      );
      expectProblem(res, 413, 'payload_too_large');
    });
  });

  describe('unknown routes', () => {
    it.each([
      ['GET without a credential', () => t.http.get('/v1/definitely-not-a-route')],
      ['GET below a real prefix', () => t.http.get('/v1/users/usr_x/nothing/here')],
      ['POST without a credential', () => t.http.post('/v1/nothing').send({ a: 1 })],
      ['DELETE below the root', () => t.http.delete('/nothing-here')],
    ])('answer 404 not_found: %s', async (_label, send) => {
      expectProblem(await send(), 404, 'not_found');
    });

    it('answer 404 not_found with a valid credential too', async () => {
      expectProblem(await t.http.get('/v1/definitely-not-a-route').set(org.auth), 404, 'not_found');
    });
  });

  describe('deny by default', () => {
    it('refuses every non-public route without a credential (401 missing_credentials)', async () => {
      const routes = registeredRoutes(t.app).filter(
        (r) => !PUBLIC_ROUTES.has(`${r.method} ${r.path}`) && !isDocumentationPath(r.path),
      );
      // The enumeration must see the real routes, or this test would prove nothing.
      expect(routes).toEqual(
        expect.arrayContaining([
          { method: 'GET', path: '/v1/users' },
          { method: 'GET', path: '/v1/users/:id' },
          { method: 'GET', path: '/v1/api-keys' },
        ]),
      );
      const answers: string[] = [];
      for (const route of routes) {
        const path = route.path.replace(/:(\w+)/g, 'x_$1');
        const res = await t.http[route.method.toLowerCase() as 'get'](path);
        answers.push(`${route.method} ${route.path} -> ${res.status} ${res.body?.code}`);
        if (res.status === 401) expectProblem(res, 401, 'missing_credentials');
      }
      expect(answers).toEqual(routes.map((r) => `${r.method} ${r.path} -> 401 missing_credentials`));
    });

    it('checks the credential before validating the body', async () => {
      const res = await t.http.post('/v1/users').send({ nonsense: true });
      expectProblem(res, 401, 'missing_credentials');
      expect(res.headers['www-authenticate']).toMatch(/^Bearer\b/);
      expect(res.body.errors).toBeUndefined();
    });

    it('refuses a non-Bearer Authorization scheme with 401 malformed_credentials', async () => {
      const basic = Buffer.from(`${org.email}:${PASSWORD}`).toString('base64');
      expectProblem(
        await t.http.get('/v1/users').set('Authorization', `Basic ${basic}`),
        401,
        'malformed_credentials',
      );
    });

    it('refuses "Bearer" with no value with 401 malformed_credentials', async () => {
      expectProblem(
        await t.http.get('/v1/users').set('Authorization', 'Bearer'),
        401,
        'malformed_credentials',
      );
    });

    it('refuses a bearer value that is neither a token nor a key with 401', async () => {
      const res = await t.http.get('/v1/users').set('Authorization', 'Bearer not-a-token');
      // Not an access token, so it is read as an API key; the key layer names the shape failure.
      expect(['invalid_credentials', 'malformed_key']).toContain(res.body.code);
      expectProblem(res, 401, res.body.code);
    });

    it('refuses a token whose signature was tampered with (401 invalid_credentials)', async () => {
      const [header, payload, signature] = org.token.split('.');
      const flipped = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
      const res = await t.http
        .get('/v1/users')
        .set('Authorization', `Bearer ${header}.${payload}.${flipped}`);
      expectProblem(res, 401, 'invalid_credentials');
    });

    it('refuses a token whose claims were changed (401 invalid_credentials)', async () => {
      const [header, payload, signature] = org.token.split('.');
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
      const forged = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 86400 })).toString(
        'base64url',
      );
      const res = await t.http
        .get('/v1/users')
        .set('Authorization', `Bearer ${header}.${forged}.${signature}`);
      expectProblem(res, 401, 'invalid_credentials');
    });

    it('accepts the genuine token (the refusals above are about the credential)', async () => {
      const res = await t.http.get('/v1/users').set(org.auth).expect(200);
      expect(res.body.data.map((u: { id: string }) => u.id)).toContain(org.userId);
    });

    it('refuses a Bearer token plus a different X-API-Key with 401 ambiguous_credentials', async () => {
      const res = await t.http
        .get('/v1/users')
        .set(org.auth)
        .set('X-API-Key', `sk_${randomBytes(24).toString('hex')}`);
      expectProblem(res, 401, 'ambiguous_credentials');
    });

    it('refuses a Bearer token plus a different ?api_key with 401 ambiguous_credentials', async () => {
      const res = await t.http
        .get('/v1/users')
        .query({ api_key: `sk_${randomBytes(24).toString('hex')}` })
        .set(org.auth);
      expectProblem(res, 401, 'ambiguous_credentials');
    });

    it('refuses an X-API-Key plus a different ?api_key with 401 ambiguous_credentials', async () => {
      const res = await t.http
        .get('/v1/users')
        .query({ api_key: `sk_${randomBytes(24).toString('hex')}` })
        .set('X-API-Key', `sk_${randomBytes(24).toString('hex')}`);
      expectProblem(res, 401, 'ambiguous_credentials');
    });
  });
});

describe('database unreachable', () => {
  let t: TestApp;
  let org: SignedUpOrganization;

  beforeAll(async () => {
    t = await startTestApp();
    org = await signUpOrganization(t.http, 'Outage');
    await t.http.get('/v1/users').set(org.auth).expect(200);
    await t.app.get(DataSource).destroy();
  });
  afterAll(async () => {
    if (!t) return;
    // The pool is gone already; the app's shutdown skips it and stops whatever else it runs.
    await t.close();
  });

  const noInternals = (res: Response): void => {
    const text = res.text;
    expect(text).not.toMatch(/\n\s+at |\bat \S+ \(.*:\d+:\d+\)|node_modules|\.ts:\d+|TypeORM|Driver not/);
  };

  it('answers an authenticated call with 503 database_unavailable', async () => {
    const res = await t.http.get('/v1/users').set(org.auth);
    expectProblem(res, 503, 'database_unavailable');
    noInternals(res);
  });

  it('answers a sign-in with 503 database_unavailable, not 401 or 500', async () => {
    const res = await t.http.post('/v1/auth/token').send({ email: org.email, password: PASSWORD });
    expectProblem(res, 503, 'database_unavailable');
    noInternals(res);
  });

  it('answers a signup with 503 database_unavailable', async () => {
    const res = await t.http.post('/v1/auth/signup').send(validSignup());
    expectProblem(res, 503, 'database_unavailable');
    noInternals(res);
  });

  it('reports not ready (503) while still live', async () => {
    const ready = await t.http.get('/health/ready');
    expectProblem(ready, 503, 'database_unavailable');
    expect(ready.body.checks.database.status).toBe('down');
    await t.http.get('/health/live').expect(200);
  });
});
