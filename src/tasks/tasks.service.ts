import { ConfigOf } from '../config/config-namespace';
import { tasksConfig } from '../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import { AgentsService } from '../agents/agents.service';
import type { Agent } from '../agents/agent.entity';
import { FREE } from '../agents/agent-pricing';
import type { CreditAccount } from '../api-keys/credits/credit-ledger';
import type { Principal } from '../access/principal';
import { isIdOf, newId } from '../common/ids';
import { TASK_ID } from './tasks.declarations';
import { invalidCursor, ListQueryDto, Page } from '../common/pagination';
import type { TaskEventData, TaskFailedData } from '../events/event-payloads.dto';
import { checkedEventData } from './task-event-data';
import { BUDGET_EXCEEDED, costOf } from './task-costs';
import { EventsService } from '../events/events.service';
import { SecretBox } from '../secrets/secret-box';
import { Secrets } from '../secrets/secrets';
import { FilesService } from '../files/files.service';
import { CreateTaskDto, ListTasksQueryDto, PostedTaskEventResponse, PostTaskEventDto } from './dto/task.dto';
import { TaskChanges } from './task-changes';
import { EventFollower, TaskEventFeeds } from './task-event-feed';
import { TaskWakeups } from './task-wakeups';
import { TaskEventRow, TaskQueueRepository } from './task-queue.repository';
import { ACTIVE_TASK_STATUSES, Task } from './task.entity';
import { TaskError, TaskErrorCode } from './tasks.errors';

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/;
// A waiting read looks at the task again at least this often, whatever it heard (see TaskChanges).
const WAIT_RECHECK_MS = 1000;
/** A task keeps at most this many events (CONTRACT, "Agent runs"); posting more is refused (429). */
export const MAX_TASK_EVENTS = 10_000;

/** An events cursor is the last `seq` seen: a positive integer, else 400 invalid_cursor. */
export function eventCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  if (!/^[0-9]{1,9}$/.test(cursor)) throw invalidCursor();
  return Number(cursor);
}

/**
 * Reserves a new task's max_credits from the creating key's balance (CONTRACT, "Costs"), given by the
 * tasks API, which holds the credits service. `reserve` answers where they came from, or refuses
 * (429 credits_exhausted, the request's own credit given back); `release` gives them back when no task
 * was made after all. Without one (the key has no balance, or an access token made it) nothing is
 * reserved.
 */
export interface TaskCreditReserver {
  /** `count` credits of every balance the creator spends (its key's, its identity's), all or none. */
  reserve(count: number): Promise<CreditAccount[]>;
  release(accounts: CreditAccount[], count: number): Promise<void>;
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
    credits?: TaskCreditReserver,
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
    let agent: Agent | null = null;
    if (dto.agent_id) {
      agent = (await this.agents.getForNewTask(principal, dto.agent_id).catch(() => undefined)) ?? null;
      if (!agent || agent.type !== dto.agent_type) {
        throw unprocessable(
          TaskErrorCode.AgentNotFound,
          `No agent ${dto.agent_id} of type "${dto.agent_type}" exists.`,
          'agent_id',
        );
      }
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

    // Priced as the agent is now, for the whole run: the one named, else the type's built-in agent (a
    // type without one, such as http, has nothing to price a task by).
    const pricedAs = agent ?? this.agents.builtInForType(principal, dto.agent_type);
    const pricing = pricedAs?.pricing ?? FREE;
    const maxCredits = dto.max_credits ?? pricedAs?.defaultMaxCredits ?? 0;
    // Reserved last, once nothing else can refuse the request: a refusal after it would have to give it back.
    const reservation = maxCredits > 0 && credits ? await credits.reserve(maxCredits) : null;

    const task = this.queue.newTask({
      id: newId(TASK_ID),
      organizationId: principal.organizationId,
      instruction: dto.instruction,
      agentType: dto.agent_type,
      agentId: agent?.id ?? null,
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
      maxCredits,
      creditsPer1kInputTokens: pricing.credits_per_1k_input_tokens,
      creditsPer1kOutputTokens: pricing.credits_per_1k_output_tokens,
      creditReservation: reservation,
    });
    let inserted: boolean;
    try {
      inserted = await this.queue.insert(task);
    } catch (error) {
      if (reservation) await credits!.release(reservation, maxCredits);
      throw error;
    }
    if (!inserted) {
      if (reservation) await credits!.release(reservation, maxCredits);
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

  /**
   * An agent's report on its run (the permission step let only this task's token through): appended
   * as the task's next event. Usage adds up; usage that costs more than the run reserved ends it as
   * failed, `budget_exceeded`, charged max_credits.
   */
  async postEvent(principal: Principal, id: string, dto: PostTaskEventDto): Promise<PostedTaskEventResponse> {
    const data = checkedEventData(dto.type, dto.data);
    const usage =
      dto.type === 'usage'
        ? { inputTokens: data.input_tokens as number, outputTokens: data.output_tokens as number }
        : { inputTokens: 0, outputTokens: 0 };
    const appended = await this.queue.appendEvent(
      principal.organizationId,
      id,
      dto.type,
      data,
      usage,
      MAX_TASK_EVENTS,
    );
    if (!appended.appended) {
      throw appended.reason === 'too_many_events'
        ? new TaskError(TaskErrorCode.TooManyTaskEvents, `A task keeps at most ${MAX_TASK_EVENTS} events.`)
        : new TaskError(TaskErrorCode.TaskTokenExpired, "The task token's run has ended.");
    }
    this.changes.changed([id]);
    if (dto.type === 'usage' && costOf(appended.usage) > appended.usage.maxCredits) {
      await this.endOverBudget(principal, id);
    }
    return { seq: appended.seq, type: dto.type };
  }

  private async endOverBudget(principal: Principal, id: string): Promise<void> {
    const task = await this.get(principal, id);
    const ended = await this.queue.failOverBudget(id, (manager, usage) =>
      this.events.record(manager, [
        {
          organizationId: task.organizationId,
          type: 'task.failed',
          data: {
            task_id: task.id,
            agent_type: task.agentType,
            usage,
            error: { ...BUDGET_EXCEEDED },
          } satisfies TaskFailedData,
        },
      ]),
    );
    if (ended) this.changes.changed([id]);
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
      (dto.max_credits === undefined || dto.max_credits === existing.maxCredits) &&
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
