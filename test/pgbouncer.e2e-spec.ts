import { spawnSync } from 'node:child_process';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { expectProblem, signUpOrganization } from './support/factories';
import { queueTask } from './support/held-agent';
import { describeWithPostgres, sharedSecrets } from './support/instances';
import { createKey, pollUntil } from './support/keys';
import { OwnPgBouncer } from './support/own-pgbouncer';
import { createTestDatabase, dropTestDatabase, startTestApp, TestApp } from './support/test-app';
import { TaskChanges } from '../src/tasks/task-changes';

/**
 * DATABASE_POOLER=transaction (docs/production.md, "Running at scale"): two instances whose pools reach
 * PostgreSQL through PgBouncer in transaction mode, and whose sessions (LISTEN, migrations) go to
 * DATABASE_DIRECT_URL. Keys work across them, a change heard through LISTEN wakes the other instance,
 * and the statement deadline holds through the pooler (the role's default, which poolers accept, where
 * a startup parameter is refused).
 */
/** Skipped, saying so, where PgBouncer is not installed; never in CI, which installs it (.ci/run). */
const HAS_PGBOUNCER = spawnSync('pgbouncer', ['--version']).status === 0;
if (!HAS_PGBOUNCER && !process.env.CI)
  console.warn('test/pgbouncer.e2e-spec.ts skipped: no pgbouncer installed');
const describeWithPgBouncer =
  HAS_PGBOUNCER || process.env.CI
    ? describeWithPostgres('through PgBouncer in transaction mode')
    : describe.skip;

describeWithPgBouncer('through PgBouncer in transaction mode', () => {
  let bouncer: OwnPgBouncer;
  let direct: string;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    bouncer = await OwnPgBouncer.start(process.env.GATEHOUSE_TEST_SERVER_URL!);
    direct = (await createTestDatabase())!;
    const env = {
      ...sharedSecrets(),
      DATABASE_POOLER: 'transaction',
      DATABASE_DIRECT_URL: direct,
      DATABASE_STATEMENT_TIMEOUT_MS: '700',
    };
    a = await startTestApp({ databaseUrl: bouncer.urlOf(direct), env });
    b = await startTestApp({ databaseUrl: bouncer.urlOf(direct), env });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    if (direct) await dropTestDatabase(direct);
    await bouncer?.close();
  });

  it("serves and verifies keys on both instances, their pools the pooler's clients", async () => {
    const org = await signUpOrganization(a.http);
    const key = await createKey(b.http, org.auth, { role: 'viewer', type: 'service' });
    await a.http.get('/v1/auth/verify').set(key.auth).expect(200);
    await b.http.get('/v1/auth/verify').set(key.auth).expect(200);
    const database = new URL(direct).pathname.slice(1);
    const clients = (await bouncer.admin('SHOW CLIENTS')).filter((row) => row.database === database);
    expect(clients.length).toBeGreaterThanOrEqual(2);
  });

  it('wakes a wait on B when A ends the task: LISTEN on the direct session, NOTIFY through the pooler', async () => {
    const org = await signUpOrganization(a.http);
    const id = await queueTask(a.http, org.auth);
    const watch = jest.spyOn(b.app.get(TaskChanges), 'watch');
    const heard = jest.spyOn(b.app.get(TaskChanges), 'changed');
    const read = b.http
      .get(`/v1/tasks/${id}`)
      .query({ wait: 60 })
      .set(org.auth)
      .then((res) => res);
    await pollUntil(
      async () => watch.mock.calls.some(([taskId]) => taskId === id),
      (yes) => yes,
      { timeoutMs: 60_000, intervalMs: 20 },
    );
    await a.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
    const res = await read;
    expect(res.body).toMatchObject({ id, status: 'cancelled' });
    // B heard it from PostgreSQL (its listener), not from A's process: a TestApp of its own.
    expect(heard.mock.calls.some(([ids, change]) => ids.includes(id) && change === 'end')).toBe(true);
    watch.mockRestore();
    heard.mockRestore();
  });

  it('holds statements to DATABASE_STATEMENT_TIMEOUT_MS through the pooler: 503 past it, then serves again', async () => {
    const pooledSetting = await a.app.get(DataSource).query('SHOW statement_timeout');
    expect(pooledSetting).toEqual([{ statement_timeout: '700ms' }]);
    const org = await signUpOrganization(a.http);
    const key = await createKey(a.http, org.auth, { role: 'viewer', type: 'service' });
    // Another session holds the keys table: the key lookup waits on its lock, as on a stuck statement.
    const locker = new Client({ connectionString: direct });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
      // An answer at all is the deadline: without it the lookup waits for the lock as long as it is held.
      expectProblem(
        await b.http.get('/v1/auth/verify').set(key.auth).timeout(60_000),
        503,
        'database_unavailable',
      );
      await locker.query('ROLLBACK');
      await b.http.get('/v1/auth/verify').set(key.auth).expect(200);
    } finally {
      await locker.end().catch(() => undefined);
    }
  });
});
