import type { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { CapturedChild, ChildOutput, exited, spawnCaptured } from './support/child-process';
import { canListSockets, listeningTcpPorts } from './support/listening-sockets';
import { freeLoopbackPort } from './support/ports';
import {
  expectProblem,
  PASSWORD,
  SignedUpOrganization,
  signIn,
  signUpOrganization,
  uniqueEmail,
} from './support/factories';
import { createKey } from './support/keys';
import { registeredRoutes } from './support/routes';
import { createTestDatabase, dropTestDatabase, startTestApp, TestApp } from './support/test-app';
import { compiledEntryPoint } from './support/compiled-app';
import { copyEmbeddedTemplate } from './support/template-database';
import { SCRATCH_ROOT } from './support/scratch-directory';

/**
 * Operating the service: health, the OpenAPI document and docs, metrics, configuration refusal,
 * SIGTERM and the embedded database's persistence. Some tests spawn the real entry point.
 */

jest.setTimeout(90_000);

const PROJECT_ROOT = resolve(__dirname, '..');

/** Registered routes with lower-case methods, as OpenAPI's `paths` spells them. */
const apiRoutes = (app: INestApplication): Array<{ method: string; path: string }> =>
  registeredRoutes(app).map((route) => ({ ...route, method: route.method.toLowerCase() }));

/** The documentation's own routes (UI, assets, the document itself) are not API operations. */
const isDocumentationPath = (path: string): boolean =>
  path === '/docs' || path.startsWith('/docs/') || /^\/openapi\.(json|ya?ml)$/.test(path);

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];

/** The routes a task token may use, with their security: any credential, or (events) the task token only. */
const ANY_OR_TASK_TOKEN = [{ bearer: [] }, { 'X-API-Key': [] }, { api_key: [] }, { taskToken: [] }];
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
      if (process.env.REDIS_URL) expect(res.body.info.redis).toEqual({ status: 'up' });
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
      const routes = apiRoutes(t.app).filter((r) => !isDocumentationPath(r.path));
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

      it('offers the three ways to present a credential, by default on every operation', () => {
        expect(full().components.securitySchemes).toMatchObject({
          bearer: { type: 'http' },
          'X-API-Key': { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          api_key: { type: 'apiKey', in: 'query', name: 'api_key' },
        });
        expect(full().security).toEqual([{ bearer: [] }, { 'X-API-Key': [] }, { api_key: [] }]);
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

type ProcessResult = ChildOutput;

/** The real entry point, as a child process with only the environment given (plus PATH and HOME). */
function spawnMain(
  env: Record<string, string | undefined>,
  { cwd = PROJECT_ROOT }: { cwd?: string } = {},
): CapturedChild {
  return spawnCaptured(process.execPath, [compiledEntryPoint('main')], {
    cwd,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...env,
    },
  });
}

async function runMain(
  env: Record<string, string | undefined>,
): Promise<ProcessResult & { timedOut: boolean }> {
  return exited(spawnMain(env), 45_000);
}

/** The JSON lines the process logs when not on a terminal. */
function logEntriesOf(stdout: string): Array<{ level: number; msg: string; context?: string }> {
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { level: number; msg: string; context?: string });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls /health/live until the child answers 200; fails at once if the child exits instead. */
async function waitUntilLive(child: CapturedChild, base: string): Promise<void> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the process exited before serving:\n${child.output().stderr}`);
    }
    const status = await request(base)
      .get('/health/live')
      .timeout(2000)
      .then((res) => res.status)
      .catch(() => 0);
    if (status === 200) return;
    await sleep(200);
  }
}

describe('the real process', () => {
  const tempDirs: string[] = [];
  // On the embedded run a DATA_DIR starts as a copy of the run's migrated database (as test instances do):
  // a process then spends its start on what the test is about, not on migrating PGlite from nothing.
  const tempDir = (): string => {
    const dir = mkdtempSync(join(SCRATCH_ROOT, 'gatehouse-ops-'));
    copyEmbeddedTemplate(dir);
    tempDirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  });

  describe('refuses to start with invalid configuration', () => {
    it('PORT that is not a port', async () => {
      const result = await runMain({ PORT: 'not-a-port', DATA_DIR: tempDir(), LOG_LEVEL: 'warn' });
      expect(result.timedOut).toBe(false);
      expect(result.code).not.toBe(0);
      expect(result.code).not.toBeNull();
      expect(result.stderr).toMatch(/\bPORT\b/);
    });

    it('NODE_ENV=production without secrets, naming both', async () => {
      const result = await runMain({
        NODE_ENV: 'production',
        PORT: String(await freeLoopbackPort()),
        DATA_DIR: tempDir(),
        LOG_LEVEL: 'warn',
      });
      expect(result.timedOut).toBe(false);
      expect(result.code).not.toBe(0);
      expect(result.code).not.toBeNull();
      expect(result.stderr).toContain('TOKEN_SIGNING_SECRET');
      expect(result.stderr).toContain('API_KEY_HASH_SECRET');
    });

    it('a placeholder TOKEN_SIGNING_SECRET in production, naming only that variable', async () => {
      const result = await runMain({
        NODE_ENV: 'production',
        PORT: String(await freeLoopbackPort()),
        DATA_DIR: tempDir(),
        LOG_LEVEL: 'warn',
        TOKEN_SIGNING_SECRET: 'change-me-change-me-change-me-1234',
        API_KEY_HASH_SECRET: randomBytes(32).toString('base64url'),
      });
      expect(result.timedOut).toBe(false);
      expect(result.code).not.toBe(0);
      expect(result.code).not.toBeNull();
      expect(result.stderr).toContain('TOKEN_SIGNING_SECRET');
      expect(result.stderr).not.toContain('API_KEY_HASH_SECRET');
    });
  });

  describe('a first start explains itself', () => {
    const stderrLines = (result: ProcessResult): string[] =>
      result.stderr.split('\n').filter((line) => line.trim() !== '');

    /** Until stdout holds `text`; fails at once if the child exits first. */
    const untilPrinted = async (child: CapturedChild, text: string): Promise<string> => {
      for (let waited = 0; waited < 40_000; waited += 100) {
        const { stdout, stderr } = child.output();
        if (stdout.includes(text)) return stdout;
        if (child.exitCode !== null) throw new Error(`exited before printing "${text}":\n${stderr}`);
        await sleep(100);
      }
      throw new Error(`never printed "${text}":\n${child.output().stdout}`);
    };

    const stop = async (child: CapturedChild): Promise<void> => {
      child.kill('SIGTERM');
      await exited(child, 45_000);
    };

    it('a bad PORT: one line naming it, saying what it must be', async () => {
      const result = await runMain({ PORT: 'abc', DATA_DIR: tempDir() });
      expect(result.code).toBe(1);
      expect(stderrLines(result)).toEqual(['Invalid configuration: PORT must be an integer number']);
    });

    it('an unreachable DATABASE_URL: one line naming it, without its password', async () => {
      const port = await freeLoopbackPort(); // nothing listens there
      const result = await runMain({
        DATABASE_URL: `postgresql://postgres:hunter2@127.0.0.1:${port}/gatehouse`,
        DATA_DIR: tempDir(),
      });
      expect(result.timedOut).toBe(false);
      expect(result.code).toBe(1);
      expect(stderrLines(result)).toEqual([
        `DATABASE_URL: cannot connect to postgresql://postgres:***@127.0.0.1:${port}/gatehouse (connect ECONNREFUSED 127.0.0.1:${port})`,
      ]);
      expect(result.stdout).toBe('');
    });

    it('an unreachable REDIS_URL: one line naming it', async () => {
      const port = await freeLoopbackPort();
      const result = await runMain({ REDIS_URL: `redis://127.0.0.1:${port}`, DATA_DIR: tempDir() });
      expect(result.code).toBe(1);
      expect(stderrLines(result)).toEqual([
        `REDIS_URL: cannot connect to redis://127.0.0.1:${port} (connect ECONNREFUSED 127.0.0.1:${port})`,
      ]);
    });

    it('readable lines: where it listens, the docs, the database, and a warning when nobody can sign in', async () => {
      const port = await freeLoopbackPort();
      const dataDir = tempDir();
      const child = spawnMain({
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        LOG_FORMAT: 'pretty',
      });
      try {
        const stdout = await untilPrinted(child, 'nobody can sign in');
        const url = `http://127.0.0.1:${port}`;
        expect(stdout).toContain(`Gatehouse 0.1.0 listening on ${url}`);
        expect(stdout).toContain(`${url}/docs`);
        expect(stdout).toContain(`database: embedded PGlite in ${dataDir}`);
        expect(stdout).toContain('redis: none');
        expect(stdout).toMatch(/WARN.*Set BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD/);
        // Nest's wiring lines are debug, and nothing is JSON.
        expect(stdout).not.toMatch(/InstanceLoader|RoutesResolver|RouterExplorer|Mapped \{/);
        expect(stdout.split('\n').filter((line) => line.startsWith('{'))).toEqual([]);
      } finally {
        await stop(child);
      }
    });

    it('JSON lines when not on a terminal, with how to sign in as the bootstrap administrator', async () => {
      const port = await freeLoopbackPort();
      const databaseUrl = await createTestDatabase();
      const child = spawnMain({
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: tempDir(),
        DATABASE_URL: databaseUrl,
        DASHBOARD_DIR: tempDir(),
        BOOTSTRAP_ADMIN_EMAIL: 'first-admin@example.com',
        BOOTSTRAP_ADMIN_PASSWORD: 'a-long-enough-password',
      });
      try {
        const entries = logEntriesOf(await untilPrinted(child, 'sign in: POST'));
        const messages = entries.map((entry) => entry.msg);
        expect(messages).toContain(
          `sign in: POST http://127.0.0.1:${port}/v1/auth/token with {"email", "password"}, e.g. as first-admin@example.com (BOOTSTRAP_ADMIN_EMAIL)`,
        );
        // No dashboard build in DASHBOARD_DIR: the banner offers none.
        expect(messages.filter((message) => message.startsWith('dashboard:'))).toEqual([]);
        expect(messages).toContainEqual(
          databaseUrl
            ? `database: PostgreSQL at ${databaseUrl}`
            : expect.stringMatching(/^database: embedded PGlite in /),
        );
        expect(entries.filter((entry) => entry.level >= 40)).toEqual([]);
        expect(entries.map((entry) => entry.context)).not.toContain('InstanceLoader');
      } finally {
        await stop(child);
        if (databaseUrl) await dropTestDatabase(databaseUrl);
      }
    });

    describe('bootstrap settings on an installation that has users', () => {
      let databaseUrl: string | undefined;
      let dataDir: string;
      let dashboardDir: string;
      const FIRST = 'first-admin@example.com';
      const PASSWORD_1 = 'a-long-enough-password';

      beforeAll(async () => {
        databaseUrl = await createTestDatabase(); // undefined on the embedded run: DATA_DIR is kept instead
        dataDir = tempDir();
        // A dashboard build, as `npm run build` leaves one.
        dashboardDir = tempDir();
        writeFileSync(join(dashboardDir, 'index.html'), '<!doctype html><title>Gatehouse</title>');
      });
      afterAll(async () => {
        if (databaseUrl) await dropTestDatabase(databaseUrl);
      });

      /** Starts the real process on the same data with these bootstrap settings; its log up to the banner. */
      const startWith = async (email: string, password: string) => {
        const port = await freeLoopbackPort();
        const child = spawnMain({
          PORT: String(port),
          HOST: '127.0.0.1',
          DATA_DIR: dataDir,
          DATABASE_URL: databaseUrl,
          DASHBOARD_DIR: dashboardDir,
          BOOTSTRAP_ADMIN_EMAIL: email,
          BOOTSTRAP_ADMIN_PASSWORD: password,
        });
        try {
          const entries = logEntriesOf(await untilPrinted(child, 'sign in: POST'));
          return {
            url: `http://127.0.0.1:${port}`,
            messages: entries.map((entry) => entry.msg),
            // What it says about the bootstrap settings (other parts may warn of their own matters).
            warnings: entries
              .filter((entry) => entry.level >= 40 && /BOOTSTRAP_/.test(entry.msg))
              .map((entry) => entry.msg),
          };
        } finally {
          await stop(child);
        }
      };
      const signInLine = (url: string) => `sign in: POST ${url}/v1/auth/token with {"email", "password"}`;

      it('creates the administrator on the first start and names it, and the dashboard, in the banner', async () => {
        const { url, messages, warnings } = await startWith(FIRST, PASSWORD_1);
        expect(warnings).toEqual([]);
        expect(messages).toContain(`${signInLine(url)}, e.g. as ${FIRST} (BOOTSTRAP_ADMIN_EMAIL)`);
        expect(messages).toContain(`dashboard: ${url}/dashboard`);
      });

      it('says nothing more when started again with the same settings', async () => {
        const { url, messages, warnings } = await startWith(FIRST, PASSWORD_1);
        expect(warnings).toEqual([]);
        expect(messages).toContain(`${signInLine(url)}, e.g. as ${FIRST} (BOOTSTRAP_ADMIN_EMAIL)`);
      });

      it('a changed BOOTSTRAP_ADMIN_EMAIL: one line says it is not applied, and the banner names no account that does not exist', async () => {
        const { url, messages, warnings } = await startWith('second-admin@example.com', PASSWORD_1);
        expect(warnings).toEqual([
          'BOOTSTRAP_ADMIN_EMAIL is set but users already exist and none is second-admin@example.com; not applied (the bootstrap settings only create the first administrator of an empty installation)',
        ]);
        expect(messages).toContain(signInLine(url));
        expect(messages.join('\n')).not.toContain('second-admin@example.com (BOOTSTRAP_ADMIN_EMAIL)');
      });

      it('a changed BOOTSTRAP_ADMIN_PASSWORD: one line says it is not applied, never the password, and the banner does not suggest it', async () => {
        const changed = 'another-long-password';
        const { url, messages, warnings } = await startWith(FIRST, changed);
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toMatch(
          new RegExp(
            `^BOOTSTRAP_ADMIN_PASSWORD is set but ${FIRST} already has another password; not applied \\(change it with PATCH /v1/users/usr_[0-9A-Za-z]+\\)$`,
          ),
        );
        expect(messages).toContain(signInLine(url));
        expect(messages.join('\n')).not.toContain(changed);
      });
    });
  });

  it('serves, then exits 0 on SIGTERM and stops listening', async () => {
    const port = await freeLoopbackPort();
    const base = `http://127.0.0.1:${port}`;
    const databaseUrl = await createTestDatabase(); // undefined on the embedded run
    const child = spawnMain({
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: tempDir(),
      LOG_LEVEL: 'warn',
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.REDIS_URL,
    });
    try {
      await waitUntilLive(child, base);
      await request(base).get('/health/ready').expect(200);

      child.kill('SIGTERM');
      const result = await exited(child, 45_000);
      expect({ timedOut: result.timedOut, code: result.code, signal: result.signal }).toEqual({
        timedOut: false,
        code: 0,
        signal: null,
      });
      await expect(request(base).get('/health/live').timeout(2000)).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited(child, 10_000);
      }
      if (databaseUrl) await dropTestDatabase(databaseUrl);
    }
  });

  it('reads .env from its working directory, a variable set in the environment winning', async () => {
    const port = await freeLoopbackPort();
    const workingDirectory = tempDir();
    // PORT comes only from .env; LOG_LEVEL there is invalid, so starting at all shows the environment won.
    writeFileSync(join(workingDirectory, '.env'), `PORT=${port}\nHOST=127.0.0.1\nLOG_LEVEL=nonsense\n`);
    const databaseUrl = await createTestDatabase();
    const child = spawnMain(
      { LOG_LEVEL: 'warn', DATA_DIR: tempDir(), DATABASE_URL: databaseUrl },
      { cwd: workingDirectory },
    );
    try {
      await waitUntilLive(child, `http://127.0.0.1:${port}`);
    } finally {
      child.kill('SIGTERM');
      await exited(child, 45_000);
      if (databaseUrl) await dropTestDatabase(databaseUrl);
    }
  });

  it('refuses a second process on an embedded data directory in use', async () => {
    const first = await startTestApp({ embedded: true });
    try {
      const result = await runMain({
        PORT: String(await freeLoopbackPort()),
        HOST: '127.0.0.1',
        DATA_DIR: first.dataDir,
        LOG_LEVEL: 'warn',
      });
      expect(result.timedOut).toBe(false);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/in use/);
      // The first instance is unharmed.
      await first.http.get('/health/ready').expect(200);
    } finally {
      await first.close();
    }
  });
});

describe('embedded database', () => {
  it('is reachable by its owner only: the process listens on its HTTP port alone, the database on an owner-only socket in DATA_DIR', async () => {
    const port = await freeLoopbackPort();
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-ops-'));
    const child = spawnMain({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    try {
      await waitUntilLive(child, `http://127.0.0.1:${port}`);
      // Anyone on the machine can connect to a loopback port, and PGlite asks for no password.
      if (canListSockets()) expect(listeningTcpPorts(child.pid!)).toEqual([port]);
      else console.warn('not on Linux: the check of listening TCP ports was skipped');

      const socketDir = join(dataDir, 'pglite-socket');
      expect(statSync(socketDir).mode & 0o777).toBe(0o700);
      expect(statSync(join(socketDir, '.s.PGSQL.5432')).mode & 0o777).toBe(0o600);
      // The owner can still look inside, as `psql "postgresql://postgres@/postgres?host=<DATA_DIR>/pglite-socket"` would.
      const owner = new Client({ host: socketDir, user: 'postgres', database: 'postgres' });
      await owner.connect();
      try {
        const { rows } = await owner.query<{ n: string }>('SELECT count(*) AS n FROM users');
        expect(rows).toEqual([{ n: '0' }]);
      } finally {
        await owner.end();
      }
    } finally {
      child.kill('SIGTERM');
      await exited(child, 45_000);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('keeps its data across a restart on the same data directory', async () => {
    const first = await startTestApp({ embedded: true });
    const dataDir = first.dataDir;
    let firstOpen = true;
    let second: TestApp | undefined;
    try {
      const org = await signUpOrganization(first.http, 'Durable');
      const extraEmail = uniqueEmail('durable');
      const extra = await first.http
        .post('/v1/users')
        .set(org.auth)
        .send({ email: extraEmail, password: PASSWORD, name: 'Durable Dev', role: 'developer' })
        .expect(201);
      await first.close({ keepData: true });
      firstOpen = false;

      second = await startTestApp({ embedded: true, dataDir });
      const token = await signIn(second.http, org.email);
      const auth = { Authorization: `Bearer ${token}` };
      const me = await second.http.get(`/v1/users/${org.userId}`).set(auth).expect(200);
      expect(me.body).toEqual(
        expect.objectContaining({ id: org.userId, email: org.email, role: 'administrator' }),
      );
      const list = await second.http.get('/v1/users').set(auth).expect(200);
      expect(list.body.data.map((u: { id: string }) => u.id).sort()).toEqual(
        [org.userId, extra.body.id].sort(),
      );
      // The other user can sign in too: password hashes survived.
      await signIn(second.http, extraEmail);
      // The signing secret kept under DATA_DIR survived, so a token issued before the restart still works.
      await second.http.get('/v1/users').set(org.auth).expect(200);
    } finally {
      if (firstOpen) await first.close({ keepData: true });
      await second?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
