import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Principal } from '../access/principal';
import {
  AgentFailure,
  AgentRunContext,
  AgentRunner,
  AgentRunners,
  TASK_TOKEN_HEADER,
} from '../agents/agent-runner';
import type { Agent } from '../agents/agent.entity';
import { AgentsService } from '../agents/agents.service';
import { FilesService } from '../files/files.service';
import { AttemptReporter } from './attempt-reporter';
import { TaskTokens } from './run-tokens/task-tokens';
import type { Task } from './task.entity';
import { TaskEvents } from './task-events';
import { TasksService } from './tasks.service';

/** A statement of the worker's, on its share of the pool (TaskWorker's WORKER_DATABASE_CONNECTIONS). */
export type WorkerStatement = <T>(statement: () => Promise<T>) => Promise<T>;

/** One attempt of a task, as the worker claimed it. */
export interface ClaimedAttempt {
  task: Task;
  workerId: string;
  /** Its task token, when its runner calls out (mintTokens). */
  taskToken: string | undefined;
  signal: AbortSignal;
}

/** What the worker needs to run an attempt: its runner, what the runner is given, and the attempt's end. */
export interface PreparedRun {
  runner: AgentRunner;
  context: AgentRunContext;
  /** Called once the run returned or threw, before its outcome is recorded: its reporter refuses from then on. */
  end(): Promise<void>;
}

/**
 * Everything an attempt carries to its runner (AgentRunContext): the task's agent and attachments, the
 * caller's key and the attempt's task token for runners that call out, and the reporter for runners that
 * run here. TaskWorker decides what runs when; this builds what each run is given.
 */
@Injectable()
export class AgentRunContexts {
  // The worker's own lines (task tokens not stored), under the name operators know them by.
  private readonly logger = new Logger('TaskWorker');
  private readonly agentLookups = new Map<string, Promise<Agent | null>>();

  constructor(
    private readonly runners: AgentRunners,
    private readonly agents: AgentsService,
    private readonly files: FilesService,
    private readonly tasks: TasksService,
    private readonly taskEvents: TaskEvents,
    private readonly tokens: TaskTokens,
    private readonly dataSource: DataSource,
  ) {}

  /**
   * A task token for each claimed task whose runner calls out, whatever hide_credentials says (which
   * decides only whether the caller's key travels too), in one statement for the batch; each dies with
   * its attempt (TaskTokens). Undefined when they could not be stored: the batch is not started, and its
   * leases run out, so the tasks are taken up again.
   */
  async mintTokens(
    claimed: readonly Task[],
    workerId: string,
    db: WorkerStatement,
  ): Promise<Map<string, string> | undefined> {
    const callingOut = claimed.filter(
      (task) => this.runners.get(task.agentType)?.forwardsCredentials !== false,
    );
    if (!callingOut.length) return new Map();
    try {
      return await db(() =>
        this.tokens.mint(
          callingOut.map((task) => ({ taskId: task.id, attempt: task.attempts, leaseOwner: workerId })),
        ),
      );
    } catch (error) {
      this.logger.warn(
        `task tokens of ${callingOut.length} claimed tasks not stored: ${(error as Error).message}`,
      );
      return undefined;
    }
  }

  /** The attempt's runner and context; an AgentFailure when it cannot run at all. */
  async prepare(attempt: ClaimedAttempt, db: WorkerStatement): Promise<PreparedRun> {
    const { task, taskToken, signal } = attempt;
    const runner = this.runners.get(task.agentType);
    // Not claimed by this worker (claimBatch takes registered types only); kept as the last guard.
    if (!runner) throw new AgentFailure('unknown_agent_type', `no agent type "${task.agentType}"`, false);
    const { agentId, organizationId } = task;
    const agent = agentId ? await this.findAgent(organizationId, agentId, db) : null;
    if (runner.needsAgent && !agent)
      throw new AgentFailure('agent_not_found', "the task's agent was deleted", false);
    const attachments = task.attachments.length
      ? await db(() => this.files.findOwned(organizationId, task.attachments))
      : [];
    const key = task.sealedCredential ? this.tasks.credentials.open(task.sealedCredential) : undefined;
    const reporter = this.reporterOf(attempt, db);
    return {
      runner,
      context: {
        task: {
          id: task.id,
          organizationId,
          instruction: task.instruction,
          attachments,
          maxCredits: task.maxCredits,
          pricing: {
            credits_per_1k_input_tokens: task.creditsPer1kInputTokens,
            credits_per_1k_output_tokens: task.creditsPer1kOutputTokens,
          },
        },
        agent,
        outboundHeaders: {
          ...(key ? { 'X-API-Key': key } : {}),
          ...(taskToken ? { [TASK_TOKEN_HEADER]: taskToken } : {}),
        },
        taskToken,
        signal,
        report: reporter,
      },
      end: () => reporter.end(),
    };
  }

  /**
   * The attempt's reports go the way an agent's posts with its task token go (TaskEvents.postEvent:
   * checked, capped, usage priced, budget_exceeded), as the task's own run: the principal only carries
   * the organization the task belongs to. They are the worker's statements, on its share of the pool.
   */
  private reporterOf(attempt: ClaimedAttempt, db: WorkerStatement): AttemptReporter {
    const { task, workerId } = attempt;
    const run: Principal = {
      kind: 'task',
      organizationId: task.organizationId,
      userId: null,
      apiKeyId: null,
      role: 'task_run',
      permissions: new Set(),
      task: { taskId: task.id, fileIds: new Set() },
    };
    return new AttemptReporter(
      {
        post: (event) =>
          db(() =>
            this.taskEvents.postEvent(run, task.id, event, { attempts: task.attempts, leaseOwner: workerId }),
          ),
      },
      attempt.signal,
    );
  }

  /**
   * The task's configured agent, single-flight: the runs of one agent claimed together (up to a batch of
   * them) share one query. Nothing is kept once it answers, so a changed config applies to the next run.
   * A built-in agent has no row (null, as for a task naming none).
   */
  private findAgent(organizationId: string, agentId: string, db: WorkerStatement): Promise<Agent | null> {
    if (this.runners.builtInAgent(agentId)) return Promise.resolve(null);
    const key = `${organizationId}/${agentId}`;
    let lookup = this.agentLookups.get(key);
    if (!lookup) {
      lookup = db(() => this.agents.findInOrganization(organizationId, agentId)).finally(() =>
        this.agentLookups.delete(key),
      );
      this.agentLookups.set(key, lookup);
    }
    return lookup;
  }
}
