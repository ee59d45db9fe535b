import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import type { Principal } from '../../src/access/principal';
import { TaskChanges } from '../../src/tasks/task-changes';
import { TaskEventFeeds } from '../../src/tasks/task-event-feed';
import { TaskQueueRepository } from '../../src/tasks/task-queue.repository';
import type { Task } from '../../src/tasks/task.entity';
import { TasksModule } from '../../src/tasks/tasks.module';
import { TaskEnds } from '../../src/tasks/task-ends';
import { TaskEvents } from '../../src/tasks/task-events';
import { TasksService } from '../../src/tasks/tasks.service';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { userOfNewOrganization } from '../support/principals';

/**
 * The event streams of a task share one reader on each instance (TaskEventFeeds), on a real database
 * without HTTP: many followers of one task each get every event once and in order, a follower that joins
 * while events keep coming (from the start or after Last-Event-ID) misses none and gets none twice, the
 * events are read once per change however many follow, and an event whose notification was lost still
 * arrives; a follower resumed past the last event ends with the task. Events other than status changes are written as the API writes them: the task's number counted
 * up, the row, then the in-process wake after the commit.
 */
describe('task event feeds (service level)', () => {
  let context: ServiceContext;
  let tasks: TasksService;
  let taskEvents: TaskEvents;
  let ends: TaskEnds;
  let queue: TaskQueueRepository;
  let feeds: TaskEventFeeds;
  let dataSource: DataSource;
  let principal: Principal;

  beforeAll(async () => {
    context = await startFeatureContext({ imports: [TasksModule] });
    tasks = context.get(TasksService);
    taskEvents = context.get(TaskEvents);
    ends = context.get(TaskEnds);
    queue = context.get(TaskQueueRepository);
    feeds = context.get(TaskEventFeeds);
    dataSource = context.get(DataSource);
    principal = userOfNewOrganization();
  });
  afterAll(() => context?.close());
  afterEach(() => jest.restoreAllMocks());

  const newTask = (): Promise<Task> =>
    tasks.create(principal, { instruction: 'streamed', agent_type: 'echo' }, undefined, undefined);

  /** Writes one progress event of the task and returns its seq; `notify: false` loses its wake. */
  async function writeEvent(taskId: string, { notify = true } = {}): Promise<number> {
    const [{ seq }] = await dataSource.query<{ seq: number }[]>(
      `WITH counted AS (UPDATE tasks SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq)
       INSERT INTO task_events (task_id, seq, type, data)
       SELECT $1, event_seq, 'progress', '{"message": "step"}' FROM counted RETURNING seq`,
      [taskId],
    );
    if (notify) context.get(TaskChanges).changed([taskId], 'events');
    return seq;
  }

  /** Follows the task's events after `afterSeq` the way a stream does, collecting their numbers. */
  function follow(task: Task, afterSeq = 0) {
    const seqs: number[] = [];
    const left = new AbortController();
    const ended = taskEvents.followEvents(task, afterSeq, {
      send: (events) => seqs.push(...events.map((event) => event.seq)),
      heartbeat: () => undefined,
      heartbeatMs: 60_000,
      signal: left.signal,
    });
    return { seqs, ended, leave: () => left.abort(), afterSeq };
  }

  async function until(condition: () => boolean, what: string, ms = 5_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(10);
    }
  }

  const range = (from: number, to: number): number[] =>
    Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
  const lastOf = (seqs: number[]): number => seqs[seqs.length - 1] ?? 0;

  it('gives every follower of a task every event once, in order, and ends them all after the terminal status', async () => {
    const task = await newTask();
    const followers = Array.from({ length: 25 }, () => follow(task));
    await until(() => followers.every((f) => f.seqs.length === 1), 'the first event');
    // Bursts of concurrent writes (they take their numbers one after the other) between single ones.
    for (let burst = 0; burst < 8; burst++) {
      await Promise.all(Array.from({ length: 5 }, () => writeEvent(task.id)));
      await writeEvent(task.id);
    }
    await ends.cancel(principal, task.id);
    await Promise.all(followers.map((f) => f.ended));
    const last = 1 + 8 * 6 + 1;
    for (const f of followers) expect(f.seqs).toEqual(range(1, last));
    expect(feeds.size).toBe(0);
  });

  it('lets followers join while events keep coming, from the start or after Last-Event-ID, missing none and repeating none', async () => {
    const task = await newTask();
    const followers: ReturnType<typeof follow>[] = [follow(task)];
    let written = 1;
    for (let i = 0; i < 60; i++) {
      written = await writeEvent(task.id);
      if (i % 6 === 0) {
        // Joining at once, without waiting for the write to arrive anywhere: behind, at and past the
        // others, and from the start.
        followers.push(follow(task, Math.max(0, written - 3)), follow(task, written), follow(task));
      }
      if (i % 4 === 0) await sleep(3);
      else await new Promise(setImmediate);
    }
    await ends.cancel(principal, task.id);
    await Promise.all(followers.map((f) => f.ended));
    const last = written + 1;
    for (const f of followers) expect(f.seqs).toEqual(range(f.afterSeq + 1, last));
  });

  it('hands a joining follower what the feed read while its own backlog read was under way', async () => {
    const task = await newTask();
    const live = follow(task);
    await until(() => live.seqs.length === 1, 'the first event');
    // The joiner's backlog read (from the start) answers only after a newer event was written and the
    // feed read it and gave it to the live follower: the answer misses that event.
    const eventsAfter = queue.eventsAfter.bind(queue);
    let raced = false;
    jest.spyOn(queue, 'eventsAfter').mockImplementation(async (taskId, afterSeq, limit) => {
      const rows = await eventsAfter(taskId, afterSeq, limit);
      if (taskId === task.id && afterSeq === 0 && !raced) {
        raced = true;
        const seq = await writeEvent(task.id);
        await until(() => lastOf(live.seqs) === seq, 'the live follower to get the newer event');
      }
      return rows;
    });
    const joiner = follow(task);
    await until(() => joiner.seqs.length === 2, 'the joiner to get both events');
    expect(raced).toBe(true);
    await ends.cancel(principal, task.id);
    await Promise.all([live.ended, joiner.ended]);
    expect(joiner.seqs).toEqual([1, 2, 3]);
    expect(live.seqs).toEqual([1, 2, 3]);
  });

  it('ends a follower resumed past the last event when the task ends at any point of its join, sending nothing', async () => {
    /** A follower after 1000 of a task that ends (cancelled) just after its join's `step` answered. */
    async function endedAfter(step: 'eventsAfter' | 'lastEvent'): Promise<number[]> {
      const task = await newTask();
      const original = (queue[step] as (...args: unknown[]) => Promise<unknown>).bind(queue);
      let cancelled = false;
      jest.spyOn(queue, step).mockImplementation(async (...args: unknown[]) => {
        const answer = await original(...args);
        // The follower's own calls: its backlog read is the one after 1000 (the feed reads after its head).
        if (args[0] === task.id && (step === 'lastEvent' || args[1] === 1000) && !cancelled) {
          cancelled = true;
          await ends.cancel(principal, task.id);
        }
        return answer as never;
      });
      const ahead = follow(task, 1000);
      let ended = false;
      void ahead.ended.then(() => (ended = true));
      await until(() => ended, `the follower to end (the task cancelled after its ${step})`, 15_000);
      expect(cancelled).toBe(true);
      jest.restoreAllMocks();
      return ahead.seqs;
    }
    // Between its empty read of the backlog and its look at the last event; then after that look.
    expect(await endedAfter('eventsAfter')).toEqual([]);
    expect(await endedAfter('lastEvent')).toEqual([]);
  });

  it('reads the events of a change once, however many follow the task', async () => {
    const EVENTS = 10;
    /** Reads of the task's events while `count` followers are live and EVENTS events come one by one. */
    async function readsWith(count: number): Promise<number> {
      const task = await newTask();
      const followers = Array.from({ length: count }, () => follow(task));
      await until(() => followers.every((f) => f.seqs.length === 1), 'the first event');
      const reads = jest.spyOn(queue, 'eventsAfter');
      for (let i = 0; i < EVENTS; i++) {
        const seq = await writeEvent(task.id);
        await until(() => followers.every((f) => lastOf(f.seqs) === seq), `event ${seq}`);
      }
      const made = reads.mock.calls.filter(([taskId]) => taskId === task.id).length;
      reads.mockRestore();
      followers.forEach((f) => f.leave());
      await Promise.all(followers.map((f) => f.ended));
      return made;
    }
    const alone = await readsWith(1);
    const many = await readsWith(40);
    // One read per change (a second one when the every-second check meets a change still being read);
    // a reader per follower would make 40 per change.
    expect(alone).toBeGreaterThanOrEqual(EVENTS);
    expect(alone).toBeLessThanOrEqual(2 * EVENTS);
    expect(many).toBeLessThanOrEqual(2 * EVENTS);
  });

  it('delivers an event whose notification was lost, by the check every second', async () => {
    const task = await newTask();
    const followers = [follow(task), follow(task)];
    await until(() => followers.every((f) => f.seqs.length === 1), 'the first event');
    const seq = await writeEvent(task.id, { notify: false });
    await until(() => followers.every((f) => lastOf(f.seqs) === seq), 'the unnotified event', 5_000);
    for (const f of followers) expect(f.seqs).toEqual([1, seq]);
    followers.forEach((f) => f.leave());
    await Promise.all(followers.map((f) => f.ended));
  });

  it('forgets a task once its last follower left, and reads it anew for the next', async () => {
    const task = await newTask();
    const first = follow(task);
    await until(() => first.seqs.length === 1, 'the first event');
    expect(feeds.size).toBe(1);
    first.leave();
    await first.ended;
    expect(feeds.size).toBe(0);
    const seq = await writeEvent(task.id);
    const next = follow(task, 1);
    await until(() => lastOf(next.seqs) === seq, 'the event written while nobody followed');
    await ends.cancel(principal, task.id);
    await next.ended;
    expect(next.seqs).toEqual([seq, seq + 1]);
  });
});
