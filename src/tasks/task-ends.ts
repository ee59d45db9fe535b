import { Injectable } from '@nestjs/common';
import type { Principal } from '../access/principal';
import type { TaskEventData } from '../events/event-payloads.dto';
import { EventsService } from '../events/events.service';
import { TaskChanges } from './task-changes';
import { TaskQueueRepository } from './task-queue.repository';
import { ACTIVE_TASK_STATUSES, Task } from './task.entity';
import { TaskError, TaskErrorCode } from './tasks.errors';
import { TasksService } from './tasks.service';

// A waiting read looks at the task again at least this often, whatever it heard (see TaskChanges).
const WAIT_RECHECK_MS = 1000;

/**
 * A task's end as its caller sees it: waited for (`GET /v1/tasks/{id}?wait=N`) or brought about
 * (cancel). Apart from TasksService because both go through TaskChanges, the signal that a task's end
 * sends to every process, which making and reading a task never need.
 */
@Injectable()
export class TaskEnds {
  constructor(
    private readonly tasks: TasksService,
    private readonly queue: TaskQueueRepository,
    private readonly changes: TaskChanges,
    private readonly events: EventsService,
  ) {}

  /**
   * The task once it is no longer queued or running, or after `seconds` as it is then (a long poll:
   * `GET /v1/tasks/{id}?wait=N`). Woken by the task's end in any process (TaskChanges), and reads again
   * at least every second.
   */
  async getWhenEnded(principal: Principal, id: string, seconds: number): Promise<Task> {
    let task = await this.tasks.get(principal, id);
    if (!ACTIVE_TASK_STATUSES.includes(task.status)) return task;
    const deadline = Date.now() + seconds * 1000;
    const watch = this.changes.watch(task.id);
    try {
      // Read again once watching: an end between the first read and the watch is not missed.
      task = await this.tasks.get(principal, id);
      while (ACTIVE_TASK_STATUSES.includes(task.status) && Date.now() < deadline) {
        const mayWaitAgain = await watch.next(Math.min(WAIT_RECHECK_MS, deadline - Date.now()));
        task = await this.tasks.get(principal, id);
        if (!mayWaitAgain) break;
      }
    } finally {
      watch.close();
    }
    return task;
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
    this.changes.changed([task.id]);
    return this.tasks.get(principal, id);
  }
}
