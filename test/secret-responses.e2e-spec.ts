import type { Response } from 'supertest';
import { PASSWORD, SignedUpOrganization, signUpOrganization, uniqueEmail } from './support/factories';
import { createKey } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

const SESSION_COOKIE = 'gatehouse_session';

/**
 * Every answer that carries a secret (an access token, a key value, a webhook signing secret) says
 * `Cache-Control: no-store`, so no browser, proxy or CDN keeps a copy of it (issue 20, finding 9).
 */
describe('responses that carry a secret', () => {
  let t: TestApp;
  let org: SignedUpOrganization;

  beforeAll(async () => {
    t = await startTestApp({ env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true' } });
    org = await signUpOrganization(t.http, 'Secrets');
  });
  afterAll(() => t?.close());

  const sessionCookieOf = (res: Response): string => {
    const line = ([] as string[])
      .concat(res.headers['set-cookie'] ?? [])
      .find((cookie) => cookie.startsWith(`${SESSION_COOKIE}=`));
    if (!line) throw new Error(`no session cookie in ${res.status} ${res.text}`);
    return line.slice(0, line.indexOf(';'));
  };

  const CASES: [string, number, string, () => Promise<Response>][] = [
    [
      'POST /v1/auth/signup',
      201,
      'access_token',
      () =>
        t.http.post('/v1/auth/signup').send({
          organization_name: 'Another',
          email: uniqueEmail('signup'),
          password: PASSWORD,
          name: 'A',
        }),
    ],
    [
      'POST /v1/auth/token',
      200,
      'access_token',
      () => t.http.post('/v1/auth/token').send({ email: org.email, password: PASSWORD }),
    ],
    [
      'POST /v1/auth/session',
      200,
      'access_token',
      () => t.http.post('/v1/auth/session').send({ email: org.email, password: PASSWORD }),
    ],
    [
      'POST /v1/auth/session/refresh',
      200,
      'access_token',
      async () => {
        const signedIn = await t.http
          .post('/v1/auth/session')
          .send({ email: org.email, password: PASSWORD })
          .expect(200);
        return t.http
          .post('/v1/auth/session/refresh')
          .set('Cookie', sessionCookieOf(signedIn))
          .set('X-Gatehouse-CSRF', '1');
      },
    ],
    [
      'POST /v1/api-keys',
      201,
      'key',
      () => t.http.post('/v1/api-keys').set(org.auth).send({ name: 'cached?', role: 'viewer' }),
    ],
    [
      'POST /v1/api-keys/{id}/rotate',
      200,
      'key',
      async () => {
        const created = await createKey(t.http, org.auth, { role: 'viewer' });
        return t.http.post(`/v1/api-keys/${created.id}/rotate`).set(org.auth).send({});
      },
    ],
    [
      'POST /v1/webhooks',
      201,
      'secret',
      () =>
        t.http
          .post('/v1/webhooks')
          .set(org.auth)
          .send({ url: 'http://127.0.0.1:9/hook', events: ['task.failed'] }),
    ],
    [
      'POST /v1/webhooks/{id}/rotate-secret',
      200,
      'secret',
      async () => {
        const created = await t.http
          .post('/v1/webhooks')
          .set(org.auth)
          .send({ url: 'http://127.0.0.1:9/hook', events: ['task.failed'] })
          .expect(201);
        return t.http.post(`/v1/webhooks/${created.body.id}/rotate-secret`).set(org.auth).send({});
      },
    ],
  ];

  it.each(CASES)('%s answers Cache-Control: no-store', async (_route, status, secretField, call) => {
    const res = await call();
    expect({ status: res.status, secret: typeof res.body?.[secretField] }).toEqual({
      status,
      secret: 'string',
    });
    expect(res.headers['cache-control']).toBe('no-store');
  });
});
