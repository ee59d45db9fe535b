import { DataSource } from 'typeorm';
import { signUpOrganization } from '../support/factories';
import { createKey, pollUntil, sleep } from '../support/keys';
import { canCreateClusters, OwnPostgres } from '../support/own-postgres';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * PostgreSQL stops and starts again under steady traffic (task creations, key creations, key
 * checks), on a cluster of the test's own. While it is down requests are answered, each a 503
 * `database_unavailable` (or a success the key cache could give), never a 500 or a hang; once it is
 * back requests succeed again; and nothing acknowledged is lost: every task answered 202 finishes with
 * one outcome, every key answered 201 is there. Each phase lasts until what it is about happened (polled,
 * with a generous deadline), and no answer is timed: a loaded machine stretches every one.
 */

/** How long a phase waits for what it is about at most: a deadline for a hang, never a bound on speed. */
const EVENTUALLY_MS = 60_000;

const RUNNABLE = canCreateClusters();
if (!RUNNABLE)
  console.warn('postgres-outage fault suite skipped: it needs pg_createcluster (postgresql-common).');

interface Answer {
  what: 'task' | 'key' | 'verify';
  status: number;
  code?: string;
  /** When it was sent and when answered (Date.now()). */
  at: number;
  answeredAt: number;
}

(RUNNABLE ? describe : describe.skip)('a PostgreSQL outage under steady traffic', () => {
  let cluster: OwnPostgres | undefined;
  let t: TestApp | undefined;

  afterAll(async () => {
    await t?.close({ keepData: false }).catch(() => undefined);
    await cluster?.close();
  });

  it('answers 503 while down, recovers, and loses no task or key', async () => {
    cluster = await OwnPostgres.create();
    const databaseUrl = await cluster.createDatabase();
    t = await startTestApp({ databaseUrl, env: { WORKER_CONCURRENCY: '2', WORKER_POLL_MS: '50' } });
    const app = t;
    const org = await signUpOrganization(app.http, 'Outage');
    const key = await createKey(app.http, org.auth, { role: 'developer', type: 'service' });

    const answers: Answer[] = [];
    const acceptedTasks: string[] = [];
    const createdKeys: string[] = [];
    let running = true;
    const timed = async (what: Answer['what'], send: () => Promise<{ status: number; body: any }>) => {
      const at = Date.now();
      const res = await send();
      answers.push({ what, status: res.status, code: res.body?.code, at, answeredAt: Date.now() });
      return res;
    };
    const traffic = async (): Promise<void> => {
      for (let i = 0; running; i++) {
        const task = await timed('task', () =>
          app.http
            .post('/v1/tasks')
            .set(org.auth)
            .send({ instruction: `steady ${i}`, agent_type: 'echo' }),
        );
        if (task.status === 202) acceptedTasks.push(task.body.id);
        const created = await timed('key', () =>
          app.http
            .post('/v1/api-keys')
            .set(org.auth)
            .send({ name: `steady ${i}`, role: 'viewer' }),
        );
        if (created.status === 201) createdKeys.push(created.body.id);
        await timed('verify', () => app.http.get('/v1/auth/verify').set(key.auth));
        await sleep(20);
      }
    };
    const loops = [traffic(), traffic(), traffic()];

    const accepted = (from: number) =>
      answers.filter((a) => a.at >= from && a.what === 'task' && a.status === 202).length;
    // Steady: a few tasks of each loop accepted before the stop.
    await pollUntil(
      async () => accepted(0),
      (count) => count >= 6,
      { timeoutMs: EVENTUALLY_MS },
    );
    const stoppedAt = Date.now();
    cluster.stop();
    // Down until requests sent after the stop were answered 503, while it is still down: none hangs
    // waiting for the database (each call to it has a deadline, configuration's to set).
    const refusedWhileDown = () =>
      answers.filter((a) => a.at >= stoppedAt && a.status === 503 && a.code === 'database_unavailable');
    await pollUntil(
      async () => refusedWhileDown().length,
      (count) => count >= 6,
      {
        timeoutMs: EVENTUALLY_MS,
      },
    );
    const downAnswers = answers.filter((a) => a.at >= stoppedAt);
    await cluster.start();
    const restartedAt = Date.now();
    const recovered = await pollUntil(
      async () => accepted(restartedAt),
      (count) => count > 0,
      {
        timeoutMs: EVENTUALLY_MS,
      },
    );
    // A few more after it, so that the steady traffic is steady again, not one lucky request.
    await pollUntil(
      async () => accepted(restartedAt),
      (count) => count >= 6,
      { timeoutMs: EVENTUALLY_MS },
    );
    running = false;
    await Promise.all(loops);

    // Down: 503 problems, answered while it was down (verify may still succeed from the key cache);
    // nothing else.
    expect(downAnswers.length).toBeGreaterThan(0);
    expect(refusedWhileDown().filter((a) => a.answeredAt < restartedAt).length).toBeGreaterThanOrEqual(6);
    const unexpected = answers.filter(
      (a) => ![200, 201, 202].includes(a.status) && !(a.status === 503 && a.code === 'database_unavailable'),
    );
    expect(unexpected).toEqual([]);
    // Back: tasks are accepted again after the restart.
    expect(recovered.value).toBeGreaterThan(0);

    // Nothing acknowledged is lost: every accepted task finishes, each with one outcome event.
    expect(acceptedTasks.length).toBeGreaterThan(0);
    const dataSource = app.app.get(DataSource);
    const finished = await pollUntil(
      async () =>
        (
          await dataSource.query<{ count: string }[]>(
            `SELECT count(*) FROM tasks WHERE id = ANY($1) AND status IN ('succeeded', 'failed')`,
            [acceptedTasks],
          )
        )[0].count,
      (count) => Number(count) === acceptedTasks.length,
      { timeoutMs: EVENTUALLY_MS },
    );
    expect(Number(finished.value)).toBe(acceptedTasks.length);
    const outcomes = await dataSource.query<{ task_id: string; count: string }[]>(
      `SELECT data->>'task_id' AS task_id, count(*) FROM events
        WHERE type IN ('task.succeeded', 'task.failed') AND data->>'task_id' = ANY($1)
        GROUP BY 1`,
      [acceptedTasks],
    );
    expect(outcomes).toHaveLength(acceptedTasks.length);
    expect(outcomes.filter((row) => Number(row.count) !== 1)).toEqual([]);
    // Every key answered 201 is there.
    const keys = await dataSource.query<{ count: string }[]>(
      `SELECT count(*) FROM api_keys WHERE id = ANY($1)`,
      [createdKeys],
    );
    expect(Number(keys[0].count)).toBe(createdKeys.length);
  });
});
