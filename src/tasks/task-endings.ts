import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleDestroy } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { ConfigOf } from '../config/config-namespace';
import { databaseConfig } from '../config/namespaces';
import { PostgresListener } from '../database/postgres-listener';

/** The channel a task's end is notified on (payload: the task id), from the transaction that ends it. */
export const TASK_ENDED_CHANNEL = 'gatehouse_task_ended';

/**
 * Wakes the requests that wait for a task to end (`GET /v1/tasks/{id}?wait=N`). In the process that
 * ended it at once (`ended`, after the commit); in every other process through PostgreSQL LISTEN/NOTIFY:
 * `notifyAlong` sends the NOTIFY in the transaction that ends the task, so it arrives at the commit and
 * a woken request reads the task ended. The embedded database serves one process, so it needs only the
 * first. The listening connection is opened by the first wait of the process, not at start: most
 * processes never hold one. A watch is also woken every `RECHECK_MS` by its caller's timeout, so a
 * notification lost while that connection is down (or sent between a read and the watch) costs at most
 * that much delay.
 */
@Injectable()
export class TaskEndings implements OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger('TaskEndings');
  private readonly watchers = new Map<string, Set<() => void>>();
  private listener?: PostgresListener;
  private closing = false;

  constructor(@Inject(databaseConfig.KEY) private readonly database: ConfigOf<typeof databaseConfig>) {}

  /** In the transaction that ends these tasks: other processes hear of it when it commits. */
  async notifyAlong(manager: EntityManager, taskIds: readonly string[]): Promise<void> {
    if (!this.database.url || !taskIds.length) return;
    await manager.query('SELECT pg_notify($1, id) FROM unnest($2::text[]) AS id', [
      TASK_ENDED_CHANNEL,
      taskIds,
    ]);
  }

  /** After the commit that ended these tasks, for the requests of this process that wait on them. */
  ended(taskIds: readonly string[]): void {
    for (const id of taskIds) for (const wake of this.watchers.get(id) ?? []) wake();
  }

  /**
   * Starts watching a task before its state is read, so that an end between the read and the wait is not
   * missed. `next(ms)` resolves when the task ended since the last call, or after `ms`, to whether the
   * caller may wait again (false once the process shuts down); `close()` when done.
   */
  watch(taskId: string): TaskWatch {
    this.listen();
    let ended = false;
    let wake: (() => void) | undefined;
    const onEnd = (): void => {
      ended = true;
      wake?.();
    };
    let watchers = this.watchers.get(taskId);
    if (!watchers) this.watchers.set(taskId, (watchers = new Set()));
    watchers.add(onEnd);
    return {
      next: async (ms) => {
        if (!ended && !this.closing) {
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
        ended = false;
        return !this.closing;
      },
      close: () => {
        watchers.delete(onEnd);
        if (!watchers.size) this.watchers.delete(taskId);
      },
    };
  }

  private listen(): void {
    if (this.listener || !this.database.url) return;
    this.listener = new PostgresListener(
      this.database.url,
      TASK_ENDED_CHANNEL,
      { onMessage: (taskId) => this.ended([taskId]) },
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

  /** Shutdown: the waiting requests answer now with what they have, so the server can close. */
  onModuleDestroy(): void {
    this.closing = true;
    for (const watchers of this.watchers.values()) for (const wake of watchers) wake();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.listener?.stop();
  }
}

export interface TaskWatch {
  next(ms: number): Promise<boolean>;
  close(): void;
}
