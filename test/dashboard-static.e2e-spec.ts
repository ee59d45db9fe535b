import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectProblem, signUpOrganization } from './support/factories';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The dashboard's files at /dashboard (DashboardModule), from a fixture build in a temporary
 * DASHBOARD_DIR: index.html for every client-side route, the assets as they are, the security headers,
 * and the API unaffected. Without a build, /dashboard is the app's 404.
 */

const INDEX_HTML =
  '<!doctype html><html><head><script type="module" src="/dashboard/assets/x.js"></script></head><body>fixture-index</body></html>';
const ASSET_JS = 'console.log("fixture-asset");';

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

function expectDashboardHeaders(res: { headers: Record<string, string> }): void {
  expect(res.headers['content-security-policy']).toBe(CSP);
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['referrer-policy']).toBe('no-referrer');
}

describe('dashboard files', () => {
  describe('with a build', () => {
    let t: TestApp;
    let directory: string;

    beforeAll(async () => {
      directory = mkdtempSync(join(tmpdir(), 'gatehouse-dashboard-'));
      mkdirSync(join(directory, 'assets'));
      writeFileSync(join(directory, 'index.html'), INDEX_HTML);
      writeFileSync(join(directory, 'assets', 'x.js'), ASSET_JS);
      t = await startTestApp({ env: { DASHBOARD_DIR: directory } });
    });
    afterAll(async () => {
      await t?.close();
      rmSync(directory, { recursive: true, force: true });
    });

    it.each(['/dashboard', '/dashboard/', '/dashboard/keys/abc', '/dashboard/settings/users?tab=2'])(
      'GET %s answers index.html, not cached, with the CSP, and needs no credential',
      async (path) => {
        const res = await t.http.get(path).expect(200);
        expect(res.headers['content-type']).toMatch(/^text\/html/);
        expect(res.text).toBe(INDEX_HTML);
        expect(res.headers['cache-control']).toBe('no-store');
        expectDashboardHeaders(res);
      },
    );

    it('serves the hashed assets as they are, cacheable, with the same headers', async () => {
      const res = await t.http.get('/dashboard/assets/x.js').expect(200);
      expect(res.headers['content-type']).toMatch(/javascript/);
      expect(res.text).toBe(ASSET_JS);
      expect(res.headers['cache-control']).toMatch(/max-age=31536000/);
      expect(res.headers['cache-control']).toMatch(/immutable/);
      expectDashboardHeaders(res);
    });

    it('answers a missing asset with 404 problem+json, not index.html', async () => {
      const res = await t.http.get('/dashboard/assets/missing.js');
      expectProblem(res, 404, 'not_found');
      expect(res.text).not.toContain('fixture-index');
      expect(res.headers['cache-control']).not.toMatch(/max-age/);
    });

    it('is outside the key check: a bad credential changes nothing', async () => {
      const res = await t.http
        .get('/dashboard/keys/abc')
        .set('Authorization', 'Bearer not-a-token')
        .expect(200);
      expect(res.text).toBe(INDEX_HTML);
    });

    it('serves nothing outside the build directory', async () => {
      for (const path of ['/dashboard/..%2f..%2fpackage.json', '/dashboard/%2e%2e/%2e%2e/package.json']) {
        const res = await t.http.get(path);
        expect(res.text).not.toContain('"name": "gatehouse"');
      }
    });

    it('answers only GET: a POST under /dashboard is a 404 problem+json', async () => {
      expectProblem(await t.http.post('/dashboard/keys').send({}), 404, 'not_found');
    });

    it('leaves the API as it was: /v1 still needs a credential, health and OpenAPI still answer', async () => {
      expectProblem(await t.http.get('/v1/users'), 401, 'missing_credentials');
      const admin = await signUpOrganization(t.http, 'Dashboard');
      const users = await t.http.get('/v1/users').set(admin.auth).expect(200);
      expect(users.headers['content-security-policy']).toBeUndefined();
      await t.http.get('/health/live').expect(200);
      const openapi = await t.http.get('/openapi.json').expect(200);
      expect(openapi.body.openapi).toBe('3.1.0');
      expectProblem(await t.http.get('/dashboardx'), 404, 'not_found');
    });
  });

  describe('without a build', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await startTestApp({ env: { DASHBOARD_DIR: join(tmpdir(), 'gatehouse-no-dashboard-build') } });
    });
    afterAll(() => t?.close());

    it.each(['/dashboard', '/dashboard/keys/abc', '/dashboard/assets/x.js'])(
      'GET %s answers 404 problem+json, and the app runs',
      async (path) => {
        const res = await t.http.get(path);
        expectProblem(res, 404, 'not_found');
        expectDashboardHeaders(res);
      },
    );

    it('still serves the API', async () => {
      await t.http.get('/health/live').expect(200);
      expectProblem(await t.http.get('/v1/users'), 401, 'missing_credentials');
    });
  });
});
