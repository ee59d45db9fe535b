import { TaskChanges } from './task-changes';
import { TaskEventFeeds } from './task-event-feed';
import type { TaskEventRow, TaskQueueRepository } from './task-queue.repository';

const row = (
  seq: number,
  type = 'output',
  data: Record<string, unknown> = { delta: `d${seq}` },
): TaskEventRow => ({
  seq,
  type,
  data,
  createdAt: new Date(0),
});

/** The events of one task, as task_events holds them, and how often they were read. */
function storedEvents(rows: TaskEventRow[]) {
  const reads: number[] = [];
  const queue = {
    lastEventSeqs: async (ids: string[]) => new Map(ids.map((id) => [id, rows.at(-1)?.seq ?? 0])),
    eventsAfter: async (_id: string, after: number, limit: number) => {
      reads.push(after);
      return rows.filter((r) => r.seq > after).slice(0, limit);
    },
    lastEvent: async () => rows.at(-1),
  } as unknown as TaskQueueRepository;
  return { queue, reads, rows };
}

describe('TaskEventFeeds', () => {
  it('sends an event appended in this process unread when it comes next, and reads when one was missed', async () => {
    const store = storedEvents([row(1, 'status', { status: 'running' }), row(2)]);
    const changes = new TaskChanges({ url: undefined } as unknown as ConstructorParameters<
      typeof TaskChanges
    >[0]);
    const feeds = new TaskEventFeeds(store.queue, changes);
    const sent: number[] = [];
    let caughtUp: () => void = () => undefined;
    const live = new Promise<void>((resolve) => (caughtUp = resolve));
    const followed = feeds.follow('task_1', 0, {
      send: (events) => {
        sent.push(...events.map((e) => e.seq));
        if (sent.includes(2)) caughtUp();
      },
      heartbeat: () => undefined,
      heartbeatMs: 60_000,
      signal: new AbortController().signal,
    });
    await live;
    const readsBefore = store.reads.length;

    store.rows.push(row(3));
    changes.changed(['task_1'], 'events', row(3));
    expect(sent).toEqual([1, 2, 3]);
    expect(store.reads).toHaveLength(readsBefore);

    // Event 4 came from another process, unheard: 5, appended here, is not next, so the feed reads.
    store.rows.push(row(4), row(5));
    changes.changed(['task_1'], 'events', row(5));
    store.rows.push(row(6, 'status', { status: 'succeeded' }));
    changes.changed(['task_1'], 'end');
    await followed;
    expect(sent).toEqual([1, 2, 3, 4, 5, 6]);
    expect(store.reads.slice(readsBefore)).toContain(3);
    feeds.onModuleDestroy();
  });
});
