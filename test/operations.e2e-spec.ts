import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { expectProblem, SignedUpOrganization, signUpOrganization } from './support/factories';
import { HAS_SHARED_REDIS } from './support/instances';
import { createKey } from './support/keys';
import { registeredRoutes } from './support/routes';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Operating the service: health, the OpenAPI document and docs, metrics. The real entry point as a
 * process (configuration refusal, the first start's output, SIGTERM, .env, the embedded database):
 * process-start.e2e-spec.ts and process-lifecycle.e2e-spec.ts.
 */

/** Registered routes with lower-case methods, as OpenAPI's `paths` spells them. */
const apiRoutes = (app: INestApplication): Array<{ method: string; path: string }> =>
  registeredRoutes(app).map((route) => ({ ...route, method: route.method.toLowerCase() }));

/** The documentation's own routes (UI, assets, the document itself) are not API operations. */
const isDocumentationPath = (path: string): boolean =>
  path === '/docs' || path.startsWith('/docs/') || /^\/openapi\.(json|ya?ml)$/.test(path);
// Not REST operations: MCP's and A2A's JSON-RPC endpoints and A2A's agent cards (docs/assistants.md,
// docs/agents-for-agents.md), and RFC 9728's metadata documents.
const isOutsideRest = (path: string): boolean =>
  path === '/mcp' || path.startsWith('/a2a/') || path.startsWith('/.well-known/');

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];

/** The routes a task token may use, with their security: any credential, or (events) the task token only. */
const ANY_OR_TASK_TOKEN = [
  { bearer: [] },
  { 'X-API-Key': [] },
  { api_key: [] },
  { oauth2: [] },
  { taskToken: [] },
];
const TASK_TOKEN_ROUTES: Record<string, unknown> = {
  'post /v1/files': ANY_OR_TASK_TOKEN,
  'get /v1/files/{id}': ANY_OR_TASK_TOKEN,
  'get /v1/files/{id}/content': ANY_OR_TASK_TOKEN,
  'get /v1/tasks/{id}': ANY_OR_TASK_TOKEN,
  'post /v1/tasks/{id}/events': [{ taskToken: [] }],
};

describe('operations endpoints', () => {
  let t: TestApp;
  let admin: SignedUpOrganization;

  const METRICS_TOKEN = randomBytes(24).toString('base64url');
  const operator = { Authorization: `Bearer ${METRICS_TOKEN}` };

  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_TOKEN } });
    admin = await signUpOrganization(t.http, 'Ops');
  });
  afterAll(() => t?.close());

  it('GET / names the server and its version and points at the API, dashboard, document and readiness', async () => {
    const res = await t.http.get('/').expect(200);
    const { version } = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(res.body).toEqual({
      name: 'Gatehouse',
      version,
      api: '/v1',
      dashboard: '/dashboard/',
      openapi: '/openapi.json',
      health: '/health/ready',
    });
    // Each is served where it says (the dashboard needs its build, which other specs check).
    for (const path of [res.body.openapi, res.body.health]) await t.http.get(path).expect(200);
    await t.http.get(`${res.body.api}/agents`).set(admin.auth).expect(200);
  });

  describe('health', () => {
    it('GET /health/live answers 200 without a credential', async () => {
      const res = await t.http.get('/health/live').expect(200);
      expect(res.body).toEqual({ status: 'ok' });
      expect(res.headers['x-request-id']).toEqual(expect.any(String));
    });

    it('GET /health/ready answers 200 without a credential, checking the database (and Redis when set)', async () => {
      const res = await t.http.get('/health/ready').expect(200);
      expect(res.body.status).toBe('ok');
      expect(res.body.info.database).toEqual({ status: 'up' });
      if (HAS_SHARED_REDIS) expect(res.body.info.redis).toEqual({ status: 'up' });
      else expect(res.body.info.redis).toBeUndefined();
    });

    it('health ignores a credential, even a bad one', async () => {
      await t.http.get('/health/live').set('Authorization', 'Bearer not-a-token').expect(200);
      await t.http.get('/health/ready').set('Authorization', 'Basic Zm9vOmJhcg==').expect(200);
    });
  });

  describe('OpenAPI', () => {
    let document: {
      openapi: string;
      paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
    };

    beforeAll(async () => {
      const res = await t.http.get('/openapi.json').expect(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      document = res.body;
    });

    it('is public and an OpenAPI 3 document', () => {
      expect(document.openapi).toMatch(/^3\./);
      expect(Object.keys(document.paths).length).toBeGreaterThan(0);
    });

    it('documents every route the app registers', () => {
      const routes = apiRoutes(t.app).filter((r) => !isDocumentationPath(r.path) && !isOutsideRest(r.path));
      // The enumeration must see the real routes, or this test would prove nothing.
      expect(routes).toEqual(
        expect.arrayContaining([
          { method: 'get', path: '/health/live' },
          { method: 'post', path: '/v1/auth/signup' },
          { method: 'get', path: '/v1/users/:id' },
          { method: 'delete', path: '/v1/teams/:id/members/:userId' },
          { method: 'get', path: '/metrics' },
        ]),
      );
      const undocumented = routes
        .map((r) => ({ method: r.method, path: r.path.replace(/:(\w+)/g, '{$1}') }))
        .filter((r) => !document.paths[r.path]?.[r.method])
        .map((r) => `${r.method.toUpperCase()} ${r.path}`);
      expect(undocumented).toEqual([]);
    });

    it('documents no operation the app does not serve', () => {
      const served = new Set(apiRoutes(t.app).map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`));
      const phantom = Object.entries(document.paths).flatMap(([path, item]) =>
        Object.keys(item)
          .filter((method) => HTTP_METHODS.includes(method))
          .filter((method) => !served.has(`${method} ${path}`))
          .map((method) => `${method.toUpperCase()} ${path}`),
      );
      expect(phantom).toEqual([]);
    });

    it('declares at least one response for every operation', () => {
      const operations = Object.entries(document.paths).flatMap(([path, item]) =>
        Object.entries(item)
          .filter(([method]) => HTTP_METHODS.includes(method))
          .map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation })),
      );
      expect(operations.length).toBeGreaterThan(10);
      const withoutResponses = operations
        .filter(({ operation }) => Object.keys(operation.responses ?? {}).length === 0)
        .map(({ name }) => name);
      expect(withoutResponses).toEqual([]);
    });

    describe('exact enough to generate a client', () => {
      type Operation = {
        security?: Record<string, string[]>[];
        responses: Record<string, { headers?: Record<string, unknown> }>;
      };
      // Written out from the contract, independently of the decorators that produce the document.
      const PUBLIC = [
        // The server's index: what it is and where its parts are.
        'get /',
        'get /health/live',
        'get /health/ready',
        'post /v1/auth/token',
        'post /v1/auth/signup',
        'post /v1/auth/session',
        // Leak reports: GitHub signs its report instead; anyone may report a key (leaked-keys suite).
        'post /v1/secret-scanning/github',
        'post /v1/credentials/revoke',
      ];
      // The dashboard's session cookie, not the key check: its own scheme (see app.setup.ts).
      const SESSION_COOKIE = ['post /v1/auth/session/refresh', 'delete /v1/auth/session'];
      const operations = (): { name: string; operation: Operation }[] =>
        Object.entries(document.paths).flatMap(([path, item]) =>
          Object.entries(item)
            .filter(([method]) => HTTP_METHODS.includes(method) && !isDocumentationPath(path))
            .map(([method, operation]) => ({ name: `${method} ${path}`, operation: operation as Operation })),
        );
      const full = () =>
        document as unknown as {
          servers: unknown[];
          security: unknown[];
          info: { license?: { name: string } };
          components: { securitySchemes: Record<string, { type: string; in?: string; name?: string }> };
        };

      it('is OpenAPI 3.1, with servers and a license', () => {
        expect(document.openapi).toBe('3.1.0');
        expect(full().servers.length).toBeGreaterThan(0);
        expect(full().info.license?.name).toEqual(expect.any(String));
        // 3.0's `nullable` has no meaning in 3.1.
        expect(JSON.stringify(document)).not.toContain('"nullable"');
      });

      it('offers the four ways to present a credential, by default on every operation', () => {
        expect(full().components.securitySchemes).toMatchObject({
          bearer: { type: 'http' },
          'X-API-Key': { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          api_key: { type: 'apiKey', in: 'query', name: 'api_key' },
        });
        expect(full().components.securitySchemes.oauth2).toMatchObject({
          type: 'oauth2',
          flows: { authorizationCode: { authorizationUrl: '/oauth/authorize', tokenUrl: '/oauth/token' } },
        });
        expect(full().security).toEqual([
          { bearer: [] },
          { 'X-API-Key': [] },
          { api_key: [] },
          { oauth2: [] },
        ]);
      });

      it('needs no security on public operations, the operator secret on /metrics', () => {
        for (const name of PUBLIC) {
          expect(
            `${name}: ${JSON.stringify(operations().find((o) => o.name === name)?.operation.security)}`,
          ).toBe(`${name}: []`);
        }
        const metrics = operations().find((o) => o.name === 'get /metrics')!.operation;
        expect(metrics.security).toEqual([{ operator: [] }]);
        for (const name of SESSION_COOKIE) {
          expect(operations().find((o) => o.name === name)?.operation.security).toEqual([
            { dashboard_session: [] },
          ]);
        }
      });

      it('names the task token scheme on exactly the routes a task token may use (contract, "Agent runs")', () => {
        const withTaskToken = operations()
          .filter(({ operation }) => JSON.stringify(operation.security ?? []).includes('taskToken'))
          .map(({ name, operation }) => [name, operation.security]);
        expect(Object.fromEntries(withTaskToken)).toEqual(TASK_TOKEN_ROUTES);
      });

      it('lists 401, 403, 429 and 503 on every operation behind the key check, with budget and retry headers', () => {
        const protectedOperations = operations().filter(
          ({ name }) => !PUBLIC.includes(name) && !SESSION_COOKIE.includes(name) && name !== 'get /metrics',
        );
        expect(protectedOperations.length).toBeGreaterThan(40);
        const incomplete = protectedOperations
          .filter(({ name, operation }) => {
            const statuses = Object.keys(operation.responses);
            const success = statuses.find((status) => status.startsWith('2'));
            return (
              (operation.security !== undefined && !TASK_TOKEN_ROUTES[name]) ||
              !['401', '403', '429', '503'].every((status) => statuses.includes(status)) ||
              !success ||
              !operation.responses[success].headers?.['X-RateLimit-Remaining'] ||
              !operation.responses['429'].headers?.['Retry-After']
            );
          })
          .map(({ name }) => name);
        expect(incomplete).toEqual([]);
      });

      it('gives every response its X-Request-Id', () => {
        const missing = operations().flatMap(({ name, operation }) =>
          Object.entries(operation.responses)
            .filter(([, response]) => !response.headers?.['X-Request-Id'])
            .map(([status]) => `${name} ${status}`),
        );
        expect(missing).toEqual([]);
      });
    });

    it('GET /docs serves the HTML UI without a credential, with its assets', async () => {
      const res = await t.http.get('/docs').expect(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toMatch(/<html[\s>]/i);
      expect(res.text).toMatch(/swagger-ui/i);

      const references = [...res.text.matchAll(/(?:src|href)="([^"]+)"/g)]
        .map((m) => new URL(m[1], 'http://gatehouse.test/docs'))
        .filter((url) => url.host === 'gatehouse.test');
      expect(references.length).toBeGreaterThan(0);
      for (const url of references) {
        const asset = await t.http.get(url.pathname);
        expect(`${url.pathname} -> ${asset.status}`).toBe(`${url.pathname} -> 200`);
      }
    });
  });

  describe('GET /metrics', () => {
    it('counts key checks by outcome (allowed or the refusal code), with no label per key', async () => {
      const key = await createKey(t.http, admin.auth, { role: 'viewer', type: 'service' });
      const counts = async (): Promise<Record<string, number>> => {
        const text = (await t.http.get('/metrics').set(operator).expect(200)).text;
        expect(text).toMatch(/^# TYPE gatehouse_key_checks_total counter$/m);
        expect(text).not.toContain(key.id);
        return Object.fromEntries(
          [...text.matchAll(/^gatehouse_key_checks_total\{outcome="([a-z_]+)"\} (\d+)$/gm)].map((m) => [
            m[1],
            Number(m[2]),
          ]),
        );
      };
      const before = await counts();
      await t.http.get('/v1/auth/verify').set(key.auth).expect(200);
      await t.http.get('/v1/auth/verify').expect(401);
      await t.http.get('/v1/users').set(key.auth).expect(403);
      const after = await counts();
      // A scrape is not a key check: the operator token is not a tenant credential.
      expect((after.allowed ?? 0) - (before.allowed ?? 0)).toBe(1);
      expect((after.missing_credentials ?? 0) - (before.missing_credentials ?? 0)).toBe(1);
      expect((after.forbidden ?? 0) - (before.forbidden ?? 0)).toBe(1);
    });

    it('refuses a request without the operator token (401 invalid_operator_token)', async () => {
      const res = expectProblem(await t.http.get('/metrics'), 401, 'invalid_operator_token');
      expect(res.detail).toContain('METRICS_TOKEN');
      expectProblem(
        await t.http.get('/metrics').set({ Authorization: `Bearer ${METRICS_TOKEN}x` }),
        401,
        'invalid_operator_token',
      );
    });

    it("refuses an organization's administrator: one tenant never reads the platform's counters", async () => {
      expectProblem(await t.http.get('/metrics').set(admin.auth), 401, 'invalid_operator_token');
      const key = await createKey(t.http, admin.auth, { role: 'administrator', type: 'service' });
      expectProblem(await t.http.get('/metrics').set(key.auth), 401, 'invalid_operator_token');
    });

    it('is off (404) when METRICS_TOKEN is unset', async () => {
      const off = await startTestApp();
      try {
        expectProblem(await off.http.get('/metrics').set(operator), 404, 'not_found');
        expectProblem(await off.http.get('/metrics'), 404, 'not_found');
      } finally {
        await off.close();
      }
    });

    it('serves Prometheus text to the operator, labelled by route pattern, never by raw path', async () => {
      const missingId = `usr_${randomBytes(11).toString('hex').slice(0, 22)}`;
      const strayPath = `/no-such-thing-${randomBytes(6).toString('hex')}`;
      await t.http.get(`/v1/users/${admin.userId}`).set(admin.auth).expect(200);
      await t.http.get(`/v1/users/${missingId}`).set(admin.auth).expect(404);
      await t.http.get(strayPath).expect(404);

      const res = await t.http.get('/metrics').set(operator).expect(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      const text = res.text;
      expect(text).toMatch(/^# TYPE http_requests_total counter$/m);
      expect(text).toMatch(/^# TYPE http_request_duration_seconds histogram$/m);

      const series = (name: string, labels: Record<string, string>): number[] =>
        text
          .split('\n')
          .filter((line) => line.startsWith(`${name}{`))
          .filter((line) => Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
          .map((line) => Number(line.slice(line.lastIndexOf(' ') + 1)));

      const byId = { method: 'GET', route: '/v1/users/:id' };
      expect(series('http_requests_total', { ...byId, status: '200' })).toEqual([expect.any(Number)]);
      expect(series('http_requests_total', { ...byId, status: '200' })[0]).toBeGreaterThanOrEqual(1);
      expect(series('http_requests_total', { ...byId, status: '404' })[0]).toBeGreaterThanOrEqual(1);
      expect(
        series('http_request_duration_seconds_count', { ...byId, status: '200' })[0],
      ).toBeGreaterThanOrEqual(1);
      expect(
        series('http_request_duration_seconds_bucket', { ...byId, status: '200', le: '+Inf' })[0],
      ).toBeGreaterThanOrEqual(1);
      expect(
        series('http_requests_total', { method: 'POST', route: '/v1/auth/signup', status: '201' })[0],
      ).toBeGreaterThanOrEqual(1);

      // Raw ids and unmatched paths would make label cardinality unbounded.
      expect(text).not.toContain(admin.userId);
      expect(text).not.toContain(missingId);
      expect(text).not.toContain(strayPath);
    });
  });
});
