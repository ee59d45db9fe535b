import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { TaskChanges } from '../src/tasks/task-changes';
import { TaskEventFeeds } from '../src/tasks/task-event-feed';
import { listen, openEventStream, startListeningApp } from './support/event-stream';
import { signUpOrganization, SignedUpOrganization } from './support/factories';
import { queueTask } from './support/held-agent';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Many event streams of one task over HTTP (contract, "Agent runs"), served by one shared reader per task
 * (TaskEventFeeds): every stream gets every event once and in order, a stream whose client left is
 * forgotten, and shutting down ends the open streams. test/medium/task-event-feed.medium-spec.ts tests
 * the feed's joins and its reads.
 */

async function until(condition: () => boolean, what: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** A progress event as the API writes one: the task's number counted up, the row, the wake after commit. */
async function writeProgress(t: TestApp, taskId: string, percent: number): Promise<void> {
  await t.app.get(DataSource).query(
    `WITH counted AS (UPDATE tasks SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq)
     INSERT INTO task_events (task_id, seq, type, data)
     SELECT $1, event_seq, 'progress', jsonb_build_object('percent', $2::int) FROM counted`,
    [taskId, percent],
  );
  t.app.get(TaskChanges).changed([taskId], 'events');
}

describe('many event streams of one task', () => {
  let t: TestApp;
  let baseUrl: string;
  let org: SignedUpOrganization;
  beforeAll(async () => {
    ({ t, baseUrl, org } = await startListeningApp());
  });
  afterAll(() => t?.close());

  it('sends every stream every event once, in order, and ends them all after the terminal status', async () => {
    const id = await queueTask(t.http, org.auth);
    const streams = await Promise.all(
      Array.from({ length: 30 }, () => openEventStream(baseUrl, id, org.auth)),
    );
    await until(() => streams.every((s) => s.events.length === 1), 'the first event');
    for (let percent = 5; percent <= 100; percent += 5) await writeProgress(t, id, percent);
    await t.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
    await Promise.all(streams.map((s) => s.ended));
    const expected = [
      { id: '1', event: 'status', data: { status: 'queued' } },
      ...Array.from({ length: 20 }, (_, i) => ({
        id: String(i + 2),
        event: 'progress',
        data: { percent: (i + 1) * 5 },
      })),
      { id: '22', event: 'status', data: { status: 'cancelled' } },
    ];
    for (const s of streams) expect(s.events).toEqual(expected);
  });

  it('forgets the streams whose clients left', async () => {
    const feeds = t.app.get(TaskEventFeeds);
    const id = await queueTask(t.http, org.auth);
    const streams = await Promise.all(
      Array.from({ length: 3 }, () => openEventStream(baseUrl, id, org.auth)),
    );
    await until(() => streams.every((s) => s.events.length === 1), 'the first event');
    expect(feeds.size).toBe(1);
    streams.forEach((s) => s.close());
    await until(() => feeds.size === 0, 'the server to let the task go');
  });
});

type EventStream = Awaited<ReturnType<typeof openEventStream>>;

/** Waits for the stream to end; one still open after `ms` is left, and the test fails saying what it got. */
async function endOf(stream: EventStream, what: string, ms = 15_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const stillOpen = new Promise<'open'>((resolve) => (timer = setTimeout(() => resolve('open'), ms)));
  const outcome = await Promise.race([stream.ended.then(() => 'ended' as const), stillOpen]);
  clearTimeout(timer);
  if (outcome === 'open') {
    stream.close();
    throw new Error(
      `${what}: the stream was still open after ${ms} ms, having sent ${JSON.stringify(stream.events)} ` +
        `and ${stream.comments.length} comment lines`,
    );
  }
}

// A browser's EventSource reconnects with its last id after every end, so a stream resumed at the terminal
// status must end too, or each viewer of a finished task holds a connection for good.
describe('event streams resumed at the end or past it', () => {
  let t: TestApp;
  let baseUrl: string;
  let org: SignedUpOrganization;
  beforeAll(async () => {
    ({ t, baseUrl, org } = await startListeningApp());
  });
  afterAll(() => t?.close());

  it('ends at once, sending nothing, for a finished task resumed at its terminal status or past it', async () => {
    const id = await queueTask(t.http, org.auth);
    await t.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
    for (const lastEventId of ['2', '3', '999999999']) {
      const stream = await openEventStream(baseUrl, id, org.auth, lastEventId);
      expect(stream.response.status).toBe(200);
      expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      await endOf(stream, `Last-Event-ID ${lastEventId} of a cancelled task (its last event is 2)`);
      expect(stream.events).toEqual([]);
    }
  });

  it('follows a live task resumed past its end: only the events numbered after Last-Event-ID, then it ends at the terminal status', async () => {
    const feeds = t.app.get(TaskEventFeeds);
    const id = await queueTask(t.http, org.auth);
    // Its events will be 1 (queued), 2-4 (progress) and 5 (cancelled): the client claims to have up to 3.
    const ahead = await openEventStream(baseUrl, id, org.auth, '3');
    // And one claims more than the task will ever have: it gets nothing, but ends with the task.
    const farAhead = await openEventStream(baseUrl, id, org.auth, '1000');
    await until(() => feeds.size === 1, 'the streams to follow the task');
    for (const percent of [10, 20, 30]) await writeProgress(t, id, percent);
    await t.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
    await endOf(ahead, 'Last-Event-ID 3 of a task that ended at 5');
    await endOf(farAhead, 'Last-Event-ID 1000 of a task that ended at 5');
    expect(ahead.events).toEqual([
      { id: '4', event: 'progress', data: { percent: 30 } },
      { id: '5', event: 'status', data: { status: 'cancelled' } },
    ]);
    expect(farAhead.events).toEqual([]);
  });
});

describe('event streams at shutdown', () => {
  it('ends the open streams, so the server closes', async () => {
    const t = await startTestApp();
    const baseUrl = await listen(t);
    const org = await signUpOrganization(t.http);
    const id = await queueTask(t.http, org.auth);
    const streams = await Promise.all([1, 2].map(() => openEventStream(baseUrl, id, org.auth)));
    await until(() => streams.every((s) => s.events.length === 1), 'the first event');
    await t.close();
    await Promise.all(streams.map((s) => s.ended));
    for (const s of streams) expect(s.events.map((e) => e.data)).toEqual([{ status: 'queued' }]);
  });
});
