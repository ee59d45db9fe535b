import { UsageCounter } from '../src/usage/usage-counter';
import { signUpOrganization } from './support/factories';
import { createKey, pollUntil } from './support/keys';
import { describeWithPostgres, sharedSecrets } from './support/instances';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Usage counted on two instances of one PostgreSQL database adds up exactly: each instance adds its
 * own counters to the shared hourly rows. PGlite serves one process, so without PostgreSQL
 * (DATABASE_URL) this suite is skipped, as test/multi-instance.e2e-spec.ts is.
 */

describeWithPostgres('usage across instances')('usage across two instances (needs PostgreSQL)', () => {
  const env = sharedSecrets();
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await startTestApp({ env });
    b = await startTestApp({ databaseUrl: a.databaseUrl, env });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('N requests on A and M on B read as exactly N + M within 10 seconds', async () => {
    const org = await signUpOrganization(a.http, 'Instances');
    const key = await createKey(a.http, org.auth, { name: 'shared' });
    const onA = 17;
    const onB = 11;
    const statuses = await Promise.all([
      ...Array.from({ length: onA }, () => a.http.get('/v1/auth/verify').set(key.auth)),
      ...Array.from({ length: onB }, () => b.http.get('/v1/auth/verify').set(key.auth)),
    ]).then((responses) => responses.map((res) => res.status));
    expect(statuses.every((status) => status === 200)).toBe(true);

    // Summed over the default 24 hours, in case the requests straddle an hour.
    const total = async (): Promise<number> => {
      const res = await b.http.get(`/v1/api-keys/${key.id}/usage`).set(org.auth).expect(200);
      return res.body.data.reduce((sum: number, bucket: { allowed: number }) => sum + bucket.allowed, 0);
    };
    const { value } = await pollUntil(total, (count) => count >= onA + onB, {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    expect(value).toBe(onA + onB);

    // Nothing is left to arrive later: no request was counted twice.
    await Promise.all([a.app.get(UsageCounter).flush(), b.app.get(UsageCounter).flush()]);
    expect(await total()).toBe(onA + onB);
  });
});
