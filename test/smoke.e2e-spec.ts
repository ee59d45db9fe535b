import { signUpOrganization } from './support/factories';
import { startTestApp, TestApp } from './support/test-app';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('signs up and lists users', async () => {
    const org = await signUpOrganization(t.http);
    const res = await t.http.get('/v1/users').set(org.auth).expect(200);
    expect(res.body.data.map((u: { id: string }) => u.id)).toEqual([org.userId]);
  });
});

describe('route order', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  // Express tries each layer's path in turn: the routes called on every request of a client (probes)
  // or thousands of times a second (the two verifies) come before all other routes (app.module.ts).
  it('tries the health probes and the two verifies before any other route', () => {
    const express = t.app.getHttpAdapter().getInstance() as {
      router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] };
    };
    const routes = express.router.stack
      .filter((layer) => layer.route)
      .map(({ route }) => `${Object.keys(route!.methods).join(',').toUpperCase()} ${route!.path}`);
    expect(routes.slice(0, 4)).toEqual([
      'GET /health/live',
      'GET /health/ready',
      'POST /v1/keys/verify',
      'GET /v1/auth/verify',
    ]);
    expect(routes.length).toBeGreaterThan(50);
  });
});
