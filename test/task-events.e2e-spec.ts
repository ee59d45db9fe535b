import { Client } from 'pg';
import { TASK_EVENTS_CHANNEL, TaskChanges } from '../src/tasks/task-changes';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { describeWithPostgres, sharedSecrets } from './support/instances';
import { pollUntil } from './support/keys';
import { queueTask, startWithHeldAgent } from './support/held-agent';
import { startTestApp, TestApp } from './support/test-app';
import { listen, openEventStream, startListeningApp } from './support/event-stream';
import { DataSource } from 'typeorm';
import { TaskEventAppends } from '../src/tasks/task-event-appends';
import { TaskQueueRepository } from '../src/tasks/task-queue.repository';

/**
 * `GET /v1/tasks/{id}/events` (contract, "Agent runs"): a task's events, status changes among them, as a
 * list page or as Server-Sent Events (from the start or after `Last-Event-ID`, ending after the terminal
 * status, delivered across instances within a second, a comment line at least every 15 seconds).
 * Each test waits for what it is about (an event, a comment), polled with a generous deadline: none
 * times an answer, which a loaded machine stretches.
 */

const status = (value: string) => ({ status: value });
/** How long a test waits for an event at most: a deadline for a hang, never a bound on speed. */
const EVENTUALLY = { timeoutMs: 60_000, intervalMs: 20 };

describe('GET /v1/tasks/{id}/events', () => {
  let t: TestApp;
  let baseUrl: string;
  let org: SignedUpOrganization;
  beforeAll(async () => {
    ({ t, baseUrl, org } = await startListeningApp());
  });
  afterAll(() => t?.close());

  it('lists the status changes, oldest first, numbered from 1, in pages', async () => {
    const id = await queueTask(t.http, org.auth);
    await t.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
    const all = await t.http.get(`/v1/tasks/${id}/events`).set(org.auth).expect(200);
    expect(all.body).toEqual({
      data: [
        { seq: 1, type: 'status', data: status('queued'), created_at: expect.any(String) },
        { seq: 2, type: 'status', data: status('cancelled'), created_at: expect.any(String) },
      ],
      next_cursor: null,
    });
    const first = await t.http.get(`/v1/tasks/${id}/events?limit=1`).set(org.auth).expect(200);
    expect(first.body.data.map((e: { seq: number }) => e.seq)).toEqual([1]);
    const second = await t.http
      .get(`/v1/tasks/${id}/events`)
      .query({ limit: 1, cursor: first.body.next_cursor })
      .set(org.auth)
      .expect(200);
    expect(second.body.data.map((e: { seq: number }) => e.seq)).toEqual([2]);
    expectProblem(await t.http.get(`/v1/tasks/${id}/events?cursor=abc`).set(org.auth), 400, 'invalid_cursor');
  });

  it("answers 404 for another organization's task, as a list and as a stream", async () => {
    const id = await queueTask(t.http, org.auth);
    const other = await signUpOrganization(t.http);
    expectProblem(await t.http.get(`/v1/tasks/${id}/events`).set(other.auth), 404);
    const stream = await openEventStream(baseUrl, id, other.auth);
    expect(stream.response.status).toBe(404);
    await stream.ended;
    expect(stream.events).toEqual([]);
  });

  it('streams from the start, ends after the terminal status, and resumes after Last-Event-ID', async () => {
    const id = await queueTask(t.http, org.auth);
    const stream = await openEventStream(baseUrl, id, org.auth);
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await pollUntil(
      async () => stream.events.length,
      (n) => n >= 1,
      EVENTUALLY,
    );
    expect(stream.events).toEqual([{ id: '1', event: 'status', data: status('queued') }]);
    await t.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
    await stream.ended;
    expect(stream.events.map((e) => [e.id, e.data])).toEqual([
      ['1', status('queued')],
      ['2', status('cancelled')],
    ]);
    const resumed = await openEventStream(baseUrl, id, org.auth, '1');
    await resumed.ended;
    expect(resumed.events).toEqual([{ id: '2', event: 'status', data: status('cancelled') }]);
  });

  it('sends a comment line while there is nothing to send', async () => {
    const id = await queueTask(t.http, org.auth);
    const stream = await openEventStream(baseUrl, id, org.auth);
    // The first comment, whenever the machine gets to it (every 15 s at most, the contract says).
    await pollUntil(
      async () => stream.comments.length,
      (n) => n >= 1,
      { timeoutMs: 120_000, intervalMs: 100 },
    );
    expect(stream.comments.length).toBeGreaterThanOrEqual(1);
    expect(stream.events).toEqual([{ id: '1', event: 'status', data: status('queued') }]);
    stream.close();
  });
});

describe('GET /v1/tasks/{id}/events of a task a worker runs', () => {
  let held: Awaited<ReturnType<typeof startWithHeldAgent>>;
  let baseUrl: string;
  beforeAll(async () => {
    held = await startWithHeldAgent({ done: true });
    baseUrl = await listen(held.t);
  });
  afterAll(() => held?.close());

  it('streams queued, running and succeeded in order as they happen', async () => {
    const org = await signUpOrganization(held.t.http);
    const id = await held.queueHeldTask(org.auth);
    const stream = await openEventStream(baseUrl, id, org.auth);
    await pollUntil(
      async () => stream.events.length,
      (n) => n >= 2,
      EVENTUALLY,
    );
    expect(stream.events.map((e) => e.data)).toEqual([status('queued'), status('running')]);
    held.release();
    await stream.ended;
    expect(stream.events.map((e) => [e.id, e.data])).toEqual([
      ['1', status('queued')],
      ['2', status('running')],
      ['3', status('succeeded')],
    ]);
  });
});

describeWithPostgres('GET /v1/tasks/{id}/events across instances')(
  'GET /v1/tasks/{id}/events across instances',
  () => {
    let a: TestApp;
    let b: TestApp;
    let baseUrlB: string;
    beforeAll(async () => {
      const env = sharedSecrets();
      a = await startTestApp({ env });
      b = await startTestApp({ env, databaseUrl: a.databaseUrl });
      baseUrlB = await listen(b);
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    it('delivers on B a change A made, heard through PostgreSQL LISTEN/NOTIFY', async () => {
      const org = await signUpOrganization(a.http);
      const id = await queueTask(a.http, org.auth);
      // What B hears of: its listener's notifications (A is an app of its own).
      const heard = jest.spyOn(b.app.get(TaskChanges), 'changed');
      const stream = await openEventStream(baseUrlB, id, org.auth);
      // B's listener connects with its first follower: the test's own notification, heard, says it listens.
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
        // An event other than a status change, written as an agent's post is: its notification says so.
        await database.query(
          `WITH counted AS (UPDATE tasks SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq)
           INSERT INTO task_events (task_id, seq, type, data)
           SELECT $1, event_seq, 'progress', '{"percent": 50}' FROM counted`,
          [id],
        );
        await pollUntil(
          async () => stream.events.length,
          (n) => n >= 2,
          EVENTUALLY,
        );
      } finally {
        await database.end();
      }
      await a.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
      await stream.ended;
      expect(stream.events.map((e) => e.data)).toEqual([
        status('queued'),
        { percent: 50 },
        status('cancelled'),
      ]);
      // Heard, not only found by the streams' once-a-second look (which no test can tell apart by time
      // on a loaded machine): the progress as a change of events, the cancellation as the end.
      expect(heard.mock.calls).toContainEqual([[id], 'events']);
      expect(heard.mock.calls).toContainEqual([[id], 'end']);
    });
  },
);

describe('Agent reports of one turn (TaskEventAppends)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  it("appends the events of distinct tasks in one statement, a task's second after its first, and refuses a stale attempt's", async () => {
    const org = await signUpOrganization(t.http);
    const [a, b, c] = [
      await queueTask(t.http, org.auth),
      await queueTask(t.http, org.auth),
      await queueTask(t.http, org.auth),
    ];
    const claimed = await t.app.get(TaskQueueRepository).claimBatch('test-worker', 60_000, 10, ['echo']);
    expect(claimed.map((task) => task.id).sort()).toEqual([a, b, c].sort());
    const attempt = { attempts: 1, leaseOwner: 'test-worker' };
    const organizationId = claimed[0].organizationId;
    const event = (
      taskId: string,
      type: string,
      data: Record<string, unknown>,
      usage = { inputTokens: 0, outputTokens: 0 },
    ) => ({
      organizationId,
      taskId,
      type,
      data,
      usage,
      maxEvents: 100,
      attempt,
    });
    const statements = jest.spyOn(t.app.get(DataSource), 'query');
    const appends = t.app.get(TaskEventAppends);
    const results = await Promise.all([
      appends.append(event(a, 'output', { delta: 'one ' })),
      appends.append(event(a, 'output', { delta: 'two' })),
      appends.append(
        event(b, 'usage', { input_tokens: 3, output_tokens: 4 }, { inputTokens: 3, outputTokens: 4 }),
      ),
      appends.append({
        ...event(c, 'output', { delta: 'late' }),
        attempt: { attempts: 2, leaseOwner: 'test-worker' },
      }),
    ]);
    // A, B and C together, the reason C was refused, then A's second event. Counted among the
    // statements of the reports (each reads its recordset): the app's own background work (the
    // worker's claims, usage flushes) shares the DataSource.
    const reports = statements.mock.calls.filter(([sql]) => String(sql).includes('jsonb_to_recordset'));
    statements.mockRestore();
    expect(reports).toHaveLength(3);
    expect(results[0]).toMatchObject({
      appended: true,
      event: { seq: 3, type: 'output', data: { delta: 'one ' } },
    });
    expect(results[1]).toMatchObject({
      appended: true,
      event: { seq: 4, type: 'output', data: { delta: 'two' } },
    });
    expect(results[2]).toMatchObject({
      appended: true,
      event: { seq: 3, type: 'usage', createdAt: expect.any(Date) },
      usage: { inputTokens: 3, outputTokens: 4 },
    });
    expect(results[3]).toEqual({ appended: false, reason: 'not_running' });
    const eventsOf = async (id: string) =>
      (await t.http.get(`/v1/tasks/${id}/events`).set(org.auth).expect(200)).body.data.map(
        (e: { type: string; data: unknown }) => [e.type, e.data],
      );
    expect(await eventsOf(a)).toEqual([
      ['status', status('queued')],
      ['status', status('running')],
      ['output', { delta: 'one ' }],
      ['output', { delta: 'two' }],
    ]);
    expect(await eventsOf(c)).toEqual([
      ['status', status('queued')],
      ['status', status('running')],
    ]);
  });

  it('fails only the report the database cannot store, not the others of its turn', async () => {
    const org = await signUpOrganization(t.http);
    const [a, b] = [await queueTask(t.http, org.auth), await queueTask(t.http, org.auth)];
    const claimed = await t.app.get(TaskQueueRepository).claimBatch('test-worker', 60_000, 10, ['echo']);
    expect(claimed.map((task) => task.id).sort()).toEqual([a, b].sort());
    const event = (taskId: string, delta: string) => ({
      organizationId: claimed[0].organizationId,
      taskId,
      type: 'output',
      data: { delta },
      usage: { inputTokens: 0, outputTokens: 0 },
      maxEvents: 100,
      attempt: { attempts: 1, leaseOwner: 'test-worker' },
    });
    const appends = t.app.get(TaskEventAppends);
    // PostgreSQL's jsonb refuses U+0000.
    const [unstorable, stored] = await Promise.allSettled([
      appends.append(event(a, 'nul \u0000 here')),
      appends.append(event(b, 'fine')),
    ]);
    expect(unstorable.status).toBe('rejected');
    expect(stored).toMatchObject({ status: 'fulfilled', value: { appended: true, event: { seq: 3 } } });
  });
});
