import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ConfigOf } from '../config/config-namespace';
import { databaseConfig, tasksConfig } from '../config/namespaces';
import { PostgresListener } from '../database/postgres-listener';

/** The channel the `tasks_queued` trigger notifies after every INSERT into tasks (see the migration). */
export const TASKS_CHANNEL = 'gatehouse_tasks';

/**
 * Wakes idle workers when a task is queued, instead of leaving them to their next poll: at once in
 * the process that queued it, and through PostgreSQL LISTEN/NOTIFY in every other process (worker
 * processes included). The embedded database serves one process, so it needs only the first. The
 * poll (WORKER_POLL_MS) stays as the backstop for retries that come due and leases that expire.
 */
@Injectable()
export class TaskWakeups implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('TaskWakeups');
  private readonly listeners = new Set<() => void>();
  private listener?: PostgresListener;

  constructor(
    @Inject(databaseConfig.KEY) private readonly database: ConfigOf<typeof databaseConfig>,
    @Inject(tasksConfig.KEY) private readonly tasks: ConfigOf<typeof tasksConfig>,
  ) {}

  onWake(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  wake(): void {
    for (const listener of this.listeners) listener();
  }

  async onApplicationBootstrap(): Promise<void> {
    // Only a process that runs workers listens.
    if (!this.database.directUrl || this.tasks.workerConcurrency === 0) return;
    this.listener = new PostgresListener(
      // LISTEN holds a session: past a pooler, PostgreSQL itself (DATABASE_DIRECT_URL).
      this.database.directUrl,
      TASKS_CHANNEL,
      { onMessage: () => this.wake() },
      this.logger,
    );
    // Without it the workers still poll: a failed first connection is a warning, and it retries.
    await this.listener
      .start()
      .catch((error: Error) => this.logger.warn(`not listening yet: ${error.message}`));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.listener?.stop();
  }
}
