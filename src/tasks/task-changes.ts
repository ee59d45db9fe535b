import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleDestroy, Optional } from '@nestjs/common';
import { ShutdownDrain } from '../common/shutdown-drain';
import { ConfigOf } from '../config/config-namespace';
import { databaseConfig } from '../config/namespaces';
import { PostgresListener } from '../database/postgres-listener';
import type { TaskEventRow } from './task-queue.repository';

/**
 * The channel of a task's new events (payload: the task id): the task_events triggers notify it in the
 * statement that writes an event (see the TaskEvents migration), delivered at commit.
 */
export const TASK_EVENTS_CHANNEL = 'gatehouse_task_events';

/**
 * What changed of a task: it ended (succeeded, failed, cancelled), or it has another event (queued or
 * started again, output, progress, usage, output files). A notification says which by its payload: the
 * task id alone for an end, the id and ` events` for the others (the TaskEventNotifyKind and
 * TaskEndNotify migrations).
 */
export type TaskChange = 'end' | 'events';
const EVENTS_SUFFIX = ' events';

/** Whom a change wakes: every change (an event stream) or the end only (a wait for it, a cancel watch). */
export interface TaskInterest {
  endsOnly?: boolean;
}

/**
 * Wakes the requests that wait on a task (`GET /v1/tasks/{id}?wait=N`, its event stream) when it has a
 * new event. In the process that changed it at once (`changed`, after the commit); in every other process
 * through PostgreSQL LISTEN/NOTIFY on the triggers' notification, so a woken request reads the change.
 * The embedded database serves one process, so it needs only the first. The listening connection is
 * opened by the first wait of the process, not at start: most processes never hold one. The waiting
 * requests also read again every second (each `?wait=N` for itself; the event streams in one statement
 * for all the tasks they follow, TaskEventFeeds), so a change this process did not hear of (its
 * connection down, a change made before the watch began, a retry a worker here recorded) costs at most
 * that much delay.
 */
@Injectable()
export class TaskChanges implements OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger('TaskChanges');
  private readonly watchers = new Map<
    string,
    Set<{ wake: (appended?: TaskEventRow) => void; endsOnly: boolean }>
  >();
  private listener?: PostgresListener;
  private closing = false;

  constructor(
    @Inject(databaseConfig.KEY) private readonly database: ConfigOf<typeof databaseConfig>,
    @Optional() drain?: ShutdownDrain,
  ) {
    drain?.onRelease(() => this.onModuleDestroy());
  }

  /**
   * After the commit that changed these tasks, for the requests of this process that wait on them (with
   * the event appended, when a single task's is known: its streams here can send it without reading): an
   * event other than the end wakes none of those that care for the end alone (neither an output delta
   * nor the task starting makes a `?wait` read the task again).
   */
  changed(taskIds: readonly string[], change: TaskChange, appended?: TaskEventRow): void {
    // The row is one task's event: with several tasks it would be handed to the others' watchers too.
    const row = taskIds.length === 1 ? appended : undefined;
    for (const id of taskIds) {
      for (const watcher of this.watchers.get(id) ?? []) {
        if (change === 'end' || !watcher.endsOnly) watcher.wake(row);
      }
    }
  }

  /**
   * Starts watching a task before its state is read, so that a change between the read and the wait is
   * not missed. `next(ms)` resolves when the task changed since the last call, or after `ms`, to whether the
   * caller may wait again (false once the process shuts down); `close()` when done.
   */
  watch(taskId: string, interest: TaskInterest = {}): TaskWatch {
    let changed = false;
    let wake: (() => void) | undefined;
    const unsubscribe = this.subscribe(
      taskId,
      () => {
        changed = true;
        wake?.();
      },
      interest,
    );
    return {
      next: async (ms) => {
        if (!changed && !this.closing) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(() => {
              wake = undefined;
              resolve();
            }, ms);
            wake = () => {
              clearTimeout(timer);
              wake = undefined;
              resolve();
            };
          });
        }
        changed = false;
        return !this.closing;
      },
      close: unsubscribe,
    };
  }

  /**
   * Calls `onChange` at each change of the task from now on (and once at shutdown), until the returned
   * function is called. Subscribe before reading the task's state, as `watch` does.
   */
  subscribe(
    taskId: string,
    onChange: (appended?: TaskEventRow) => void,
    interest: TaskInterest = {},
  ): () => void {
    this.listen();
    let watchers = this.watchers.get(taskId);
    if (!watchers) this.watchers.set(taskId, (watchers = new Set()));
    const own = watchers;
    // An entry of its own, so that subscribing one function twice gives two independent subscriptions.
    const watcher = {
      wake: (appended?: TaskEventRow): void => onChange(appended),
      endsOnly: interest.endsOnly ?? false,
    };
    own.add(watcher);
    return () => {
      own.delete(watcher);
      if (!own.size && this.watchers.get(taskId) === own) this.watchers.delete(taskId);
    };
  }

  private listen(): void {
    if (this.listener || !this.database.directUrl) return;
    this.listener = new PostgresListener(
      // LISTEN holds a session: past a pooler, PostgreSQL itself (DATABASE_DIRECT_URL).
      this.database.directUrl,
      TASK_EVENTS_CHANNEL,
      {
        // A bare id is an end; so is, from a database before TaskEndNotify, any status change (waits
        // woken by a start read the task and wait again, as they did then).
        onMessage: (payload) =>
          payload.endsWith(EVENTS_SUFFIX)
            ? this.changed([payload.slice(0, -EVENTS_SUFFIX.length)], 'events')
            : this.changed([payload], 'end'),
      },
      this.logger,
    );
    // Until it listens, the watches' rechecks answer alone; after a failed first connection the next
    // watch tries again (once connected, the listener reconnects by itself).
    const listener = this.listener;
    listener.start().catch((error: Error) => {
      this.logger.warn(`not listening yet: ${error.message}`);
      if (this.listener === listener) this.listener = undefined;
    });
  }

  /**
   * Shutdown: the waiting requests answer now with what they have, so the server can close (when the
   * port closes, ShutdownDrain; at the latest with the app).
   */
  onModuleDestroy(): void {
    this.closing = true;
    for (const watchers of this.watchers.values()) for (const watcher of watchers) watcher.wake();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.listener?.stop();
  }
}

export interface TaskWatch {
  next(ms: number): Promise<boolean>;
  close(): void;
}
