import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ApiKeyFormat } from '../src/api-keys/api-key-format';
import { CapturedChild, exited, spawnCaptured } from './support/child-process';
import { listen } from './support/event-stream';
import { signUpOrganization, SignedUpOrganization } from './support/factories';
import { createKey, CreatedKey } from './support/keys';
import { freeLoopbackPort } from './support/ports';
import { startTestApp, TestApp } from './support/test-app';

/**
 * docs/verifying-keys.md's "A service that checks its callers" runs as printed: the service it prints is
 * examples/verify-service/orders-service.mjs byte for byte, and that file, started with `node` as a child
 * process beside a listening app, lets in the callers whose key satisfies its permission query and has the
 * credits, charging each call its cost, and answers the refusals with its own statuses. The section's
 * commands (the service started in the background and called as a customer would) run in
 * test/docs-guides.e2e-spec.ts.
 */

const PROJECT_ROOT = resolve(__dirname, '..');
const SERVICE_FILE = 'examples/verify-service/orders-service.mjs';

/** The "## A service that checks its callers" section of docs/verifying-keys.md (up to the next heading). */
function serviceSection(): string {
  const readme = readFileSync(join(PROJECT_ROOT, 'docs', 'verifying-keys.md'), 'utf8');
  const start = readme.search(/^## A service that checks its callers$/m);
  if (start < 0)
    throw new Error('docs/verifying-keys.md has no "## A service that checks its callers" section');
  // The next heading outside a fenced block (the shell blocks' comments start with `# ` too).
  const lines = readme.slice(start).split('\n');
  let fenced = false;
  const end = lines.findIndex((line, i) => {
    if (line.startsWith('```')) fenced = !fenced;
    return i > 0 && !fenced && /^#{1,2} /.test(line);
  });
  return lines.slice(0, end < 0 ? undefined : end).join('\n');
}

/** Waits until `url` answers at all (the service answers a request without a key with 401). */
async function waitUntilServing(child: { exitCode: number | null; signalCode: string | null }, url: string) {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error('the service exited before serving');
    const up = await fetch(url, { signal: AbortSignal.timeout(2000) })
      .then(() => true)
      .catch(() => false);
    if (up) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the service did not serve within 30 s');
}

/** A request to the service: its status and JSON body. */
async function call(url: string, init: { method?: string; key?: string } = {}) {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: init.key ? { authorization: `Bearer ${init.key}` } : {},
    signal: AbortSignal.timeout(15_000),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe('docs/verifying-keys.md: a service that checks its callers', () => {
  let t: TestApp;
  let baseUrl: string;
  let org: SignedUpOrganization;
  let gateway: CreatedKey;
  let identityId: string;

  beforeAll(async () => {
    t = await startTestApp();
    baseUrl = await listen(t);
    org = await signUpOrganization(t.http);
    gateway = await createKey(t.http, org.auth, { name: 'gateway', role: 'api_manager', type: 'service' });
    const identity = await t.http
      .post('/v1/identities')
      .set(org.auth)
      .send({ external_id: 'cus_1042', meta: { plan: 'pro' } })
      .expect(201);
    identityId = identity.body.id;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('prints examples/verify-service/orders-service.mjs verbatim in a ```js block', () => {
    const source = readFileSync(join(PROJECT_ROOT, SERVICE_FILE), 'utf8');
    expect(source.length).toBeGreaterThan(500);
    expect(serviceSection()).toContain('```js\n' + source + '```\n');
  });

  describe('the printed service', () => {
    let service: CapturedChild;
    let url: string;

    beforeAll(async () => {
      const port = await freeLoopbackPort();
      url = `http://127.0.0.1:${port}/orders`;
      service = spawnCaptured(process.execPath, [SERVICE_FILE], {
        cwd: PROJECT_ROOT,
        env: {
          PATH: process.env.PATH,
          PORT: String(port),
          GATEHOUSE_URL: baseUrl,
          GATEHOUSE_SERVICE_KEY: gateway.key,
        },
      });
      await waitUntilServing(service, url).catch((error: Error) => {
        throw new Error(`${error.message}:\n${service.output().stderr}`);
      });
    });
    afterAll(async () => {
      if (service && service.exitCode === null && service.signalCode === null) service.kill('SIGTERM');
      if (service) await exited(service, 10_000);
    });

    it('lets in a key that satisfies the query, spending the cost in credits (2 to place, 1 to read)', async () => {
      const customer = await createKey(t.http, org.auth, {
        name: 'Acme',
        role: 'developer',
        credits: { remaining: 10 },
        identity_id: identityId,
      });
      const placed = await call(url, { method: 'POST', key: customer.key });
      expect(placed).toEqual({
        status: 200,
        body: { order: { id: 'ord_1042', status: 'placed' }, customer: 'cus_1042', credits_remaining: 8 },
      });
      const read = await call(url, { key: customer.key });
      expect(read).toEqual({
        status: 200,
        body: { order: { id: 'ord_1041', status: 'shipped' }, customer: 'cus_1042', credits_remaining: 7 },
      });
      const shown = await t.http.get(`/v1/api-keys/${customer.id}`).set(org.auth).expect(200);
      expect(shown.body.credits).toMatchObject({ remaining: 7 });
    });

    it('a key without an identity or a credit limit: customer and credits_remaining are null', async () => {
      const customer = await createKey(t.http, org.auth, { name: 'no limits', role: 'developer' });
      expect(await call(url, { key: customer.key })).toEqual({
        status: 200,
        body: { order: { id: 'ord_1041', status: 'shipped' }, customer: null, credits_remaining: null },
      });
    });

    it('403 for a key lacking the permissions (a viewer cannot create tasks), spending no credits', async () => {
      const viewer = await createKey(t.http, org.auth, {
        name: 'viewer',
        role: 'viewer',
        credits: { remaining: 10 },
      });
      expect(await call(url, { method: 'POST', key: viewer.key })).toEqual({
        status: 403,
        body: { error: 'forbidden' },
      });
      const shown = await t.http.get(`/v1/api-keys/${viewer.id}`).set(org.auth).expect(200);
      expect(shown.body.credits).toMatchObject({ remaining: 10 });
    });

    it('429 for a key with fewer credits than the cost, spending none', async () => {
      const poor = await createKey(t.http, org.auth, {
        name: 'poor',
        role: 'developer',
        credits: { remaining: 1 },
      });
      expect(await call(url, { method: 'POST', key: poor.key })).toEqual({
        status: 429,
        body: { error: 'credits_exhausted' },
      });
      // One credit still pays for a read.
      expect(await call(url, { key: poor.key })).toMatchObject({
        status: 200,
        body: { credits_remaining: 0 },
      });
    });

    it('401 for an unknown key, a malformed one, a deleted one and no key at all', async () => {
      expect(await call(url, { key: new ApiKeyFormat('sk').generate() })).toEqual({
        status: 401,
        body: { error: 'invalid_credentials' },
      });
      expect(await call(url, { key: 'not-a-key' })).toEqual({
        status: 401,
        body: { error: 'malformed_key' },
      });
      const deleted = await createKey(t.http, org.auth, { name: 'deleted', role: 'developer' });
      await t.http.delete(`/v1/api-keys/${deleted.id}`).set(org.auth).expect(204);
      expect(await call(url, { key: deleted.key })).toEqual({
        status: 401,
        body: { error: 'invalid_credentials' },
      });
      expect(await call(url)).toEqual({ status: 401, body: { error: 'missing_key' } });
    });
  });

  it('502 when Gatehouse refuses the service its own key', async () => {
    const port = await freeLoopbackPort();
    const url = `http://127.0.0.1:${port}/orders`;
    const developer = await createKey(t.http, org.auth, { name: 'no verify', role: 'developer' });
    const service = spawnCaptured(process.execPath, [SERVICE_FILE], {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH,
        PORT: String(port),
        GATEHOUSE_URL: baseUrl,
        GATEHOUSE_SERVICE_KEY: developer.key,
      },
    });
    try {
      await waitUntilServing(service, url);
      expect(await call(url, { key: developer.key })).toEqual({
        status: 502,
        body: { error: 'verification_unavailable' },
      });
      expect(service.output().stderr).toMatch(/verify answered 403/);
    } finally {
      if (service.exitCode === null && service.signalCode === null) service.kill('SIGTERM');
      await exited(service, 10_000);
    }
  });
});
