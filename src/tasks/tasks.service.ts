import { ConfigOf } from '../config/config-namespace';
import { tasksConfig } from '../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import { AgentsService } from '../agents/agents.service';
import type { Principal } from '../access/principal';
import { isIdOf, newId } from '../common/ids';
import { TASK_ID } from './tasks.declarations';
import { invalidCursor, ListQueryDto, Page } from '../common/pagination';
import type { TaskEventData } from '../events/event-payloads.dto';
import { EventsService } from '../events/events.service';
import { SecretBox } from '../secrets/secret-box';
import { Secrets } from '../secrets/secrets';
import { FilesService } from '../files/files.service';
import { CreateTaskDto, ListTasksQueryDto } from './dto/task.dto';
import { TaskChanges } from './task-changes';
import { EventFollower, TaskEventFeeds } from './task-event-feed';
import { TaskWakeups } from './task-wakeups';
import { TaskEventRow, TaskQueueRepository } from './task-queue.repository';
import { ACTIVE_TASK_STATUSES, Task } from './task.entity';
import { TaskError, TaskErrorCode } from './tasks.errors';

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/;
// A waiting read looks at the task again at least this often, whatever it heard (see TaskChanges).
const WAIT_RECHECK_MS = 1000;

/** An events cursor is the last `seq` seen: a positive integer, else 400 invalid_cursor. */
export function eventCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  if (!/^[0-9]{1,9}$/.test(cursor)) throw invalidCursor();
  return Number(cursor);
}

@Injectable()
export class TasksService {
  readonly credentials: SecretBox;

  constructor(
    private readonly queue: TaskQueueRepository,
    private readonly agents: AgentsService,
    private readonly files: FilesService,
    private readonly events: EventsService,
    @Inject(tasksConfig.KEY) private readonly config: ConfigOf<typeof tasksConfig>,
    secrets: Secrets,
    private readonly wakeups: TaskWakeups,
    private readonly changes: TaskChanges,
    private readonly feeds: TaskEventFeeds,
  ) {
    this.credentials = secrets.sealer('task-credentials');
  }

  /**
   * Queues a task. With an Idempotency-Key, a retried request returns the first task (and a different
   * request under the same key is refused). `forwardKey` is the caller's key when it may be passed on.
   */
  async create(
    principal: Principal,
    dto: CreateTaskDto,
    idempotencyKey: string | undefined,
    forwardKey: string | undefined,
  ): Promise<Task> {
    if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
      throw new TaskError(
        TaskErrorCode.InvalidIdempotencyKey,
        'Idempotency-Key must be 1-200 visible ASCII characters.',
      );
    }
    if (idempotencyKey) {
      const existing = await this.queue.findByIdempotencyKey(principal.organizationId, idempotencyKey);
      if (existing) return this.sameRequestOrConflict(existing, dto);
    }

    const runner = this.agents.runnerOf(dto.agent_type);
    if (!runner) {
      throw unprocessable(
        TaskErrorCode.UnknownAgentType,
        `There is no agent type "${dto.agent_type}"; known types: ${this.agents.agentTypes().join(', ')}.`,
        'agent_type',
      );
    }
    let agentId: string | null = null;
    if (dto.agent_id) {
      const agent = await this.agents.get(principal, dto.agent_id).catch(() => undefined);
      if (!agent || agent.type !== dto.agent_type) {
        throw unprocessable(
          TaskErrorCode.AgentNotFound,
          `No agent ${dto.agent_id} of type "${dto.agent_type}" exists.`,
          'agent_id',
        );
      }
      agentId = agent.id;
    } else if (runner.needsAgent) {
      throw unprocessable(
        TaskErrorCode.AgentRequired,
        `Tasks of type "${dto.agent_type}" need an agent_id.`,
        'agent_id',
      );
    }
    const attachments = [...new Set(dto.attachments ?? [])];
    const owned = await this.files.findOwned(principal.organizationId, attachments);
    if (owned.length !== attachments.length) {
      const missing = attachments.find((id) => !owned.some((file) => file.id === id));
      throw unprocessable(
        TaskErrorCode.AttachmentNotFound,
        `The attachment ${missing} is not a file of this organization.`,
        'attachments',
      );
    }

    const task = this.queue.newTask({
      id: newId(TASK_ID),
      organizationId: principal.organizationId,
      instruction: dto.instruction,
      agentType: dto.agent_type,
      agentId,
      attachments,
      status: 'queued',
      result: null,
      error: null,
      attempts: 0,
      maxAttempts: this.config.maxAttempts,
      leaseOwner: null,
      leaseExpiresAt: null,
      idempotencyKey: idempotencyKey ?? null,
      sealedCredential:
        forwardKey && runner.forwardsCredentials !== false ? this.credentials.seal(forwardKey) : null,
      createdBy: principal.apiKeyId ?? principal.userId,
      startedAt: null,
      completedAt: null,
    });
    if (!(await this.queue.insert(task))) {
      // Another request under the same Idempotency-Key queued its task first.
      const first = await this.queue.findByIdempotencyKey(principal.organizationId, idempotencyKey!);
      return this.sameRequestOrConflict(first!, dto);
    }
    this.wakeups.wake();
    return task;
  }

  list(principal: Principal, query: ListTasksQueryDto): Promise<Page<Task>> {
    return this.queue.page(principal.organizationId, query.status, query);
  }

  async get(principal: Principal, id: string): Promise<Task> {
    const task = isIdOf(TASK_ID, id)
      ? await this.queue.findInOrganization(principal.organizationId, id)
      : null;
    if (!task) throw new TaskError(TaskErrorCode.NotFound, 'The task was not found.');
    return task;
  }

  /**
   * The task once it is no longer queued or running, or after `seconds` as it is then (a long poll:
   * `GET /v1/tasks/{id}?wait=N`). Woken by the task's end in any process (TaskChanges), and reads again
   * at least every second.
   */
  async getWhenEnded(principal: Principal, id: string, seconds: number): Promise<Task> {
    let task = await this.get(principal, id);
    if (!ACTIVE_TASK_STATUSES.includes(task.status)) return task;
    const deadline = Date.now() + seconds * 1000;
    const watch = this.changes.watch(task.id);
    try {
      // Read again once watching: an end between the first read and the watch is not missed.
      task = await this.get(principal, id);
      while (ACTIVE_TASK_STATUSES.includes(task.status) && Date.now() < deadline) {
        const mayWaitAgain = await watch.next(Math.min(WAIT_RECHECK_MS, deadline - Date.now()));
        task = await this.get(principal, id);
        if (!mayWaitAgain) break;
      }
    } finally {
      watch.close();
    }
    return task;
  }

  /**
   * A page of the task's events after `cursor` (the last `seq` seen), oldest first; `next_cursor` while
   * more are stored. The events of a task that ends later come after it, on a later read.
   */
  async eventPage(principal: Principal, id: string, query: ListQueryDto): Promise<Page<TaskEventRow>> {
    const task = await this.get(principal, id);
    const limit = query.limit ?? 20;
    const rows = await this.queue.eventsAfter(task.id, eventCursor(query.cursor), limit + 1);
    const data = rows.slice(0, limit);
    return { data, next_cursor: rows.length > limit ? String(data[data.length - 1].seq) : null };
  }

  /**
   * The task's events after `afterSeq` as they come, until its terminal status event: `follower.send` is
   * called with each batch, in order, each event once; resolves once the terminal status was sent, the
   * client left (`follower.signal`) or the process shuts down. The streams of one task on this instance
   * share one reader of its events (TaskEventFeeds); `heartbeat` is called when nothing was sent for
   * `heartbeatMs`.
   */
  followEvents(task: Task, afterSeq: number, follower: EventFollower): Promise<void> {
    return this.feeds.follow(task.id, afterSeq, follower);
  }

  /** Queued or running tasks become cancelled at once; a running worker notices at its next heartbeat. */
  async cancel(principal: Principal, id: string): Promise<Task> {
    const task = await this.get(principal, id);
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
    return this.get(principal, id);
  }

  private sameRequestOrConflict(existing: Task, dto: CreateTaskDto): Task {
    const same =
      existing.instruction === dto.instruction &&
      existing.agentType === dto.agent_type &&
      (existing.agentId ?? undefined) === dto.agent_id &&
      JSON.stringify(existing.attachments) === JSON.stringify([...new Set(dto.attachments ?? [])]);
    if (!same) {
      throw new TaskError(
        TaskErrorCode.IdempotencyKeyReused,
        'This Idempotency-Key was used for a different request.',
      );
    }
    return existing;
  }
}

/** A task request naming something that does not exist (or not in this organization). */
function unprocessable(code: TaskErrorCode, detail: string, field: string): TaskError {
  return new TaskError(code, detail, { errors: [{ field, message: detail }] });
}
