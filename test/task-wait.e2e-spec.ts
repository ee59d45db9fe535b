import type { Response } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { Client } from 'pg';
import { TASK_EVENTS_CHANNEL, TaskChanges } from '../src/tasks/task-changes';
import { describeWithPostgres, sharedSecrets } from './support/instances';
import { pollUntil } from './support/keys';
import { queueTask, startWithHeldAgent } from './support/held-agent';
import { startTestApp, TestApp } from './support/test-app';
import { DataSource } from 'typeorm';
import { TaskQueueRepository } from '../src/tasks/task-queue.repository';

/**
 * `GET /v1/tasks/{id}?wait=N` (contract, "Agent runs"): answers as soon as the task is no longer queued or
 * running, or after N seconds with its state then; N is 1..60. The instances here run no workers, so a
 * task stays queued until it is cancelled: the cancel is the end the wait hears of.
 *
 * No test here measures how long an answer took (a loaded machine stretches every one): "before N runs
 * out" is an order, the read answered while a shorter wait started after it is still open, and "as soon
 * as the task ends" is the wait seen waiting (its watch on the task) before the task ends.
 */

type Auth = SignedUpOrganization['auth'];

/** Starts a waiting read; `elapsedMs` is how long it took, for the one test of a lower bound. */
function timedWait(http: TestAgent, auth: Auth, id: string, wait: number | string) {
  const started = Date.now();
  return http
    .get(`/v1/tasks/${id}`)
    .query({ wait })
    .set(auth)
    .then((res: Response) => ({ res, elapsedMs: Date.now() - started }));
}

/**
 * Whether `read` (already sent) answers before a witness: a wait of `witnessWait` seconds, sent after it,
 * on a task of `auth`'s organization that stays queued. A read that answers first did not wait out a
 * longer N of its own, however slow the machine. The witness's task is cancelled after, so that the
 * witness answers too.
 */
async function answersFirst<T>(
  http: TestAgent,
  auth: Auth,
  read: Promise<T>,
  witnessWait = 20,
): Promise<{ value: T; first: boolean }> {
  const witnessTask = await queueTask(http, auth);
  let witnessAnswered = false;
  const witness = http
    .get(`/v1/tasks/${witnessTask}`)
    .query({ wait: witnessWait })
    .set(auth)
    .then(() => (witnessAnswered = true));
  const value = await read;
  const first = !witnessAnswered;
  await http.post(`/v1/tasks/${witnessTask}/cancel`).set(auth).expect(200);
  await witness;
  return { value, first };
}

/** Resolves once a read on this instance watches task `id` (it waits), polled with a generous deadline. */
async function waiting(t: TestApp, watch: jest.SpyInstance, id: string): Promise<void> {
  const { value } = await pollUntil(
    async () => watch.mock.calls.some(([taskId]) => taskId === id),
    (seen) => seen,
    { timeoutMs: 60_000, intervalMs: 20 },
  );
  expect(value).toBe(true);
}

describe('GET /v1/tasks/{id}?wait=N', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  let watch: jest.SpyInstance;
  beforeAll(async () => {
    t = await startTestApp();
    org = await signUpOrganization(t.http);
    watch = jest.spyOn(t.app.get(TaskChanges), 'watch');
  });
  afterAll(() => t.close());

  it('answers as soon as the task ends, not when N runs out', async () => {
    const id = await queueTask(t.http, org.auth);
    const read = timedWait(t.http, org.auth, id, 60);
    await waiting(t, watch, id);
    await t.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
    const { value, first } = await answersFirst(t.http, org.auth, read);
    expect(value.res.status).toBe(200);
    expect(value.res.body).toMatchObject({ id, status: 'cancelled' });
    expect(first).toBe(true);
  });

  it('answers once the recheck of the waited tasks finds an end no process heard of', async () => {
    const id = await queueTask(t.http, org.auth);
    const rechecked = jest.spyOn(t.app.get(TaskQueueRepository), 'endedAmong');
    const read = timedWait(t.http, org.auth, id, 60);
    // Waiting once a recheck has looked for it (and found it queued).
    const looked = await pollUntil(
      async () => rechecked.mock.calls.some(([tasks]) => tasks.some((task) => task.id === id)),
      (yes) => yes,
      { timeoutMs: 60_000, intervalMs: 20 },
    );
    expect(looked.value).toBe(true);
    // Ended with the triggers off (no status event, no notification) and without TaskChanges: only the
    // recheck, which looks at every task waited on here in one statement, can find it.
    await t.app.get(DataSource).transaction(async (manager) => {
      await manager.query(`SET LOCAL session_replication_role = replica`);
      await manager.query(`UPDATE tasks SET status = 'cancelled', completed_at = now() WHERE id = $1`, [id]);
    });
    const { res } = await read;
    expect(res.body).toMatchObject({ id, status: 'cancelled' });
    const found = await Promise.all(
      rechecked.mock.results.map((result) => result.value as Promise<string[]>),
    );
    expect(found.some((ids) => ids.includes(id))).toBe(true);
    rechecked.mockRestore();
  });

  it('answers at once for a task that has ended already', async () => {
    const id = await queueTask(t.http, org.auth);
    await t.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
    const { value, first } = await answersFirst(t.http, org.auth, timedWait(t.http, org.auth, id, 60));
    expect(value.res.body.status).toBe('cancelled');
    expect(first).toBe(true);
  });

  it('answers after N seconds with the task as it is then', async () => {
    const id = await queueTask(t.http, org.auth);
    const { res, elapsedMs } = await timedWait(t.http, org.auth, id, 1);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'queued' });
    // It waited (a lower bound, which no load can break); when it answers after that is the machine's.
    expect(elapsedMs).toBeGreaterThanOrEqual(950);
  });

  it.each([['0'], ['61'], ['1.5'], ['soon']])('refuses wait=%s with 400, before waiting', async (wait) => {
    const id = await queueTask(t.http, org.auth);
    const { value, first } = await answersFirst(t.http, org.auth, timedWait(t.http, org.auth, id, wait), 1);
    expectProblem(value.res, 400);
    // Before a wait of 1 s sent after it: refused before any wait as long as the witness's.
    expect(first).toBe(true);
  });

  it("answers 404 for another organization's task, without waiting", async () => {
    const id = await queueTask(t.http, org.auth);
    const other = await signUpOrganization(t.http);
    const { value, first } = await answersFirst(t.http, other.auth, timedWait(t.http, other.auth, id, 60));
    expectProblem(value.res, 404);
    expect(first).toBe(true);
  });
});

describe('GET /v1/tasks/{id}?wait=N on a task a worker runs', () => {
  let held: Awaited<ReturnType<typeof startWithHeldAgent>>;
  beforeAll(async () => (held = await startWithHeldAgent({ answer: 42 })));
  afterAll(() => held?.close());

  it('answers with the result as soon as the worker records it', async () => {
    const org = await signUpOrganization(held.t.http);
    const id = await held.queueHeldTask(org.auth);
    const changes = held.t.app.get(TaskChanges);
    const watch = jest.spyOn(changes, 'watch');
    const woken = jest.spyOn(changes, 'changed');
    const read = timedWait(held.t.http, org.auth, id, 60);
    await waiting(held.t, watch, id);
    held.release();
    const { res } = await read;
    expect(res.body).toMatchObject({ status: 'succeeded', result: { answer: 42 } });
    // Woken by the worker's record (this process's TaskChanges), not found by a recheck. (A witness wait
    // cannot be used here: this instance's worker would run the witness's task.)
    expect(woken.mock.calls.some(([ids]) => ids.includes(id))).toBe(true);
  });
});

describeWithPostgres('GET /v1/tasks/{id}?wait=N across instances')(
  'GET /v1/tasks/{id}?wait=N across instances',
  () => {
    let a: TestApp;
    let b: TestApp;
    beforeAll(async () => {
      const env = sharedSecrets();
      a = await startTestApp({ env });
      b = await startTestApp({ env, databaseUrl: a.databaseUrl });
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    it('wakes a wait on B when A ends the task (LISTEN/NOTIFY)', async () => {
      const org = await signUpOrganization(a.http);
      const id = await queueTask(a.http, org.auth);
      const changesOfB = b.app.get(TaskChanges);
      const watch = jest.spyOn(changesOfB, 'watch');
      // What B hears of: its listener's notifications (and nothing of A's process, a TestApp of its own).
      const heard = jest.spyOn(changesOfB, 'changed');
      const read = timedWait(b.http, org.auth, id, 60);
      await waiting(b, watch, id);
      // B's listener connects on its first wait: the test's own notification, heard, says it listens.
      const database = new Client({ connectionString: a.databaseUrl });
      await database.connect();
      try {
        const listens = await pollUntil(
          async () => {
            await database.query(`SELECT pg_notify($1, 'probe')`, [TASK_EVENTS_CHANNEL]);
            return heard.mock.calls.some(([ids]) => ids.includes('probe'));
          },
          (yes) => yes,
          { timeoutMs: 60_000, intervalMs: 100 },
        );
        expect(listens.value).toBe(true);
      } finally {
        await database.end();
      }
      await a.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
      const { value, first } = await answersFirst(b.http, org.auth, read);
      expect(value.res.body).toMatchObject({ id, status: 'cancelled' });
      expect(first).toBe(true);
      // The wait also looks again every second; B heard the end through PostgreSQL's notification.
      expect(heard.mock.calls.some(([ids]) => ids.includes(id))).toBe(true);
    });

    it('notifies the end as the bare task id, and its queueing and start as events (a wait sleeps through them)', async () => {
      const org = await signUpOrganization(a.http);
      const listener = new Client({ connectionString: a.databaseUrl });
      await listener.connect();
      try {
        const payloads: string[] = [];
        let heardEnd: () => void = () => undefined;
        const ended = new Promise<void>((resolve) => (heardEnd = resolve));
        let id = '';
        listener.on('notification', ({ payload }) => {
          if (!id || !payload?.startsWith(id)) return;
          payloads.push(payload);
          if (payload === id) heardEnd();
        });
        await listener.query(`LISTEN ${TASK_EVENTS_CHANNEL}`);
        id = await queueTask(a.http, org.auth);
        const [claimed] = await a.app.get(TaskQueueRepository).claimBatch('test-worker', 60_000, 1, ['echo']);
        expect(claimed?.id).toBe(id);
        await a.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
        await ended;
        // The insert's notification may come before `id` is known here; the start's and the end's not.
        expect(payloads.slice(-2)).toEqual([`${id} events`, id]);
      } finally {
        await listener.end();
      }
    });
  },
);
