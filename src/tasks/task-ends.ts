import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import type { Principal } from '../access/principal';
import type { TaskEventData } from '../events/event-payloads.dto';
import { EventsService } from '../events/events.service';
import { TaskChanges } from './task-changes';
import { TaskQueueRepository } from './task-queue.repository';
import { ACTIVE_TASK_STATUSES, Task } from './task.entity';
import { TaskError, TaskErrorCode } from './tasks.errors';
import { TasksService } from './tasks.service';

// The tasks waited on in this process are looked at again together this often, whatever was heard.
const WAIT_RECHECK_MS = 1000;

/**
 * A task's end as its caller sees it: waited for (`GET /v1/tasks/{id}?wait=N`) or brought about
 * (cancel). Apart from TasksService because both go through TaskChanges, the signal that a task's end
 * sends to every process, which making and reading a task never need.
 */
@Injectable()
export class TaskEnds implements OnModuleDestroy {
  private readonly logger = new Logger('TaskEnds');
  /** The tasks waited on here, by id: their organization and how many waits each has. */
  private readonly waited = new Map<string, { organizationId: string; waits: number }>();
  private recheck?: NodeJS.Timeout;
  /** A recheck under way: one at a time, however slow the database. */
  private rechecking = false;

  constructor(
    private readonly tasks: TasksService,
    private readonly queue: TaskQueueRepository,
    private readonly changes: TaskChanges,
    private readonly events: EventsService,
  ) {}

  /**
   * The task once it is no longer queued or running, or after `seconds` as it is then (a long poll:
   * `GET /v1/tasks/{id}?wait=N`). Woken by a change of the task's status in any process (TaskChanges;
   * its output and other events wake nothing), and by the recheck every second of all the tasks waited
   * on here in one statement, for an end this process did not hear of. The task is read when woken only.
   */
  async getWhenEnded(principal: Principal, id: string, seconds: number): Promise<Task> {
    // Watching before the read: an end between the read and the wait is not missed.
    const watch = this.changes.watch(id, { endsOnly: true });
    try {
      let task = await this.tasks.get(principal, id);
      const deadline = Date.now() + seconds * 1000;
      if (!ACTIVE_TASK_STATUSES.includes(task.status) || Date.now() >= deadline) return task;
      const stopRechecking = this.recheckWhileWaiting(task);
      try {
        while (ACTIVE_TASK_STATUSES.includes(task.status) && Date.now() < deadline) {
          const mayWaitAgain = await watch.next(deadline - Date.now());
          task = await this.tasks.get(principal, id);
          if (!mayWaitAgain) break;
        }
      } finally {
        stopRechecking();
      }
      return task;
    } finally {
      watch.close();
    }
  }

  onModuleDestroy(): void {
    clearInterval(this.recheck);
    this.recheck = undefined;
  }

  private recheckWhileWaiting(task: Task): () => void {
    const entry = this.waited.get(task.id) ?? { organizationId: task.organizationId, waits: 0 };
    entry.waits++;
    this.waited.set(task.id, entry);
    this.recheck ??= setInterval(() => void this.recheckWaited(), WAIT_RECHECK_MS).unref();
    return () => {
      if (--entry.waits > 0) return;
      this.waited.delete(task.id);
      if (!this.waited.size) this.onModuleDestroy();
    };
  }

  /** Wakes the waits of the tasks that ended unheard of (a notification lost, the listener down). */
  private async recheckWaited(): Promise<void> {
    const waited = [...this.waited].map(([id, { organizationId }]) => ({ id, organizationId }));
    if (!waited.length || this.rechecking) return;
    this.rechecking = true;
    try {
      const ended = await this.queue.endedAmong(waited);
      if (ended.length) this.changes.changed(ended, 'end');
    } catch (error) {
      this.logger.warn(`recheck of waited tasks failed: ${(error as Error).message}`);
    } finally {
      this.rechecking = false;
    }
  }

  /** Queued or running tasks become cancelled at once; a running worker notices at its next heartbeat. */
  async cancel(principal: Principal, id: string): Promise<Task> {
    const task = await this.tasks.get(principal, id);
    const cancelled = await this.queue.cancel(task.id, (manager) =>
      this.events.record(manager, [
        {
          organizationId: task.organizationId,
          type: 'task.cancelled',
          data: { task_id: task.id, agent_type: task.agentType } satisfies TaskEventData,
        },
      ]),
    );
    if (!cancelled) throw new TaskError(TaskErrorCode.TaskFinished, `The task is already ${task.status}.`);
    this.changes.changed([task.id], 'end');
    return this.tasks.get(principal, id);
  }
}
