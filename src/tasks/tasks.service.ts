import { activeTraceParent } from '../telemetry/telemetry';
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
import type { ListQueryDto, Page } from '../common/pagination';
import { SecretBox } from '../secrets/secret-box';
import { Secrets } from '../secrets/secrets';
import { FilesService } from '../files/files.service';
import { CreateTaskDto, ListTasksQueryDto } from './dto/task.dto';
import { TaskWakeups } from './task-wakeups';
import { type TaskFilter, TaskQueueRepository } from './task-queue.repository';
import type { Task } from './task.entity';
import { TaskError, TaskErrorCode } from './tasks.errors';

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/;

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

/**
 * A task as a resource: queued (its agent, attachments and credits checked, an Idempotency-Key honoured),
 * listed and read. Kept apart from what happens to a task later (TaskEvents: its event log; TaskEnds:
 * waiting for its end and cancelling it), so that each holds only the collaborators its work needs.
 */
@Injectable()
export class TasksService {
  /** Seals the caller's key a task may forward (create); AgentRunContexts opens it for the run. */
  readonly credentials: SecretBox;

  constructor(
    private readonly queue: TaskQueueRepository,
    private readonly agents: AgentsService,
    private readonly files: FilesService,
    @Inject(tasksConfig.KEY) private readonly config: ConfigOf<typeof tasksConfig>,
    secrets: Secrets,
    private readonly wakeups: TaskWakeups,
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
    /** The A2A conversation the task is made in (A2A's SendMessage); none for REST and MCP. */
    contextId?: string,
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
      contextId: contextId ?? null,
      traceParent: activeTraceParent() ?? null,
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
    return this.queue.page(principal.organizationId, { status: query.status }, query);
  }

  /** One agent's tasks, newest first, narrowed to a status or an A2A conversation (A2A's ListTasks). */
  listOfAgent(
    principal: Principal,
    agentId: string,
    filter: Omit<TaskFilter, 'agentId'>,
    query: ListQueryDto,
  ) {
    return this.queue.page(principal.organizationId, { ...filter, agentId }, query);
  }

  async get(principal: Principal, id: string): Promise<Task> {
    const task = isIdOf(TASK_ID, id)
      ? await this.queue.findInOrganization(principal.organizationId, id)
      : null;
    if (!task) throw new TaskError(TaskErrorCode.NotFound, 'The task was not found.');
    return task;
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
