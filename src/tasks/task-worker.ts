import { ConfigOf } from '../config/config-namespace';
import { lifecycleConfig, tasksConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AgentFailure, AgentRunners, TASK_TOKEN_HEADER } from '../agents/agent-runner';
import { TickBatch } from '../common/tick-batch';
import { AgentsService } from '../agents/agents.service';
import type { TaskEndedData, TaskFailedData } from '../events/event-payloads.dto';
import { EventsService } from '../events/events.service';
import { FilesService } from '../files/files.service';
import { TaskOutcome, TaskQueueRepository } from './task-queue.repository';
import { Task } from './task.entity';
import { TaskChanges } from './task-changes';
import { TaskWakeups } from './task-wakeups';
import { TasksService } from './tasks.service';
import { TaskTokens } from './run-tokens/task-tokens';

const MAX_BACKOFF_MS = 60_000;
// At most this many tasks claimed in one statement.
const CLAIM_BATCH = 32;
// Renewals per lease: three may fail (a slow database moment) before a healthy task loses its lease.
const HEARTBEATS_PER_LEASE = 4;

/**
 * The durable queue's consumer. One dispatcher keeps up to WORKER_CONCURRENCY tasks in flight: it
 * claims as many as there are free slots in one statement (FOR UPDATE SKIP LOCKED: queued and due, or
 * running with an expired lease, its worker died; of the agent types it has a runner for, so a type only
 * another process has is left to that one), and sleeps only when the queue is empty, until a
 * task is queued (TaskWakeups) or WORKER_POLL_MS passes. Each task holds a lease renewed while the
 * agent runs; outcomes finishing together are recorded in one transaction, each only while this
 * worker still owns the lease, so an outcome is recorded once. Failures are retried with exponential
 * backoff and jitter up to TASK_MAX_ATTEMPTS. A cancellation (or a lost lease) aborts the running
 * agent at the next heartbeat. On shutdown it stops claiming, gives running tasks the grace period,
 * then hands the rest back to the queue.
 */
@Injectable()
export class TaskWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('TaskWorker');
  readonly workerId = `worker_${randomUUID()}`;
  private stopping = false;
  private dispatcher?: Promise<void>;
  private readonly running = new Map<string, AbortController>();
  private readonly executions = new Set<Promise<void>>();
  /** Ends the dispatcher's current wait (a task was queued, a slot came free); remembered if none. */
  private nudge: () => void = () => (this.nudged = true);
  private nudged = false;
  private stopListening: () => void = () => undefined;
  /** Outcomes finishing in the same turn of the event loop are recorded in one transaction. */
  private readonly outcomes = new TickBatch<FinishedTask, void>(async (batch) => {
    await this.recordOutcomes(batch);
    return batch.map(() => undefined);
  });

  constructor(
    @Inject(tasksConfig.KEY) private readonly config: ConfigOf<typeof tasksConfig>,
    @Inject(lifecycleConfig.KEY) private readonly lifecycle: ConfigOf<typeof lifecycleConfig>,
    private readonly queue: TaskQueueRepository,
    private readonly runners: AgentRunners,
    private readonly agents: AgentsService,
    private readonly files: FilesService,
    private readonly tasks: TasksService,
    private readonly events: EventsService,
    private readonly wakeups: TaskWakeups,
    private readonly changes: TaskChanges,
    private readonly tokens: TaskTokens,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.workerConcurrency === 0) return;
    this.stopListening = this.wakeups.onWake(() => this.nudge());
    this.dispatcher = this.dispatch();
  }

  private async dispatch(): Promise<void> {
    // Every module's onModuleInit has run (runners register there): the types are final.
    const agentTypes = this.runners.types();
    await this.reportTasksOfOtherTypes(agentTypes);
    while (!this.stopping) {
      const free = this.config.workerConcurrency - this.running.size;
      let claimed: Task[] = [];
      if (free > 0) {
        try {
          claimed = await this.queue.claimBatch(
            this.workerId,
            this.config.leaseMs,
            Math.min(free, CLAIM_BATCH),
            agentTypes,
          );
        } catch (error) {
          this.logger.warn(`claim failed: ${(error as Error).message}`);
        }
      }
      if (claimed.length) this.changes.changed(claimed.map((task) => task.id));
      for (const task of claimed) this.start(task);
      // Claim again at once while the queue gives all that was asked; otherwise wait for a nudge.
      if (free > 0 && claimed.length === Math.min(free, CLAIM_BATCH)) continue;
      await this.idle(free > 0 ? this.config.pollMs : undefined);
    }
  }

  /**
   * Says at start which queued or running tasks this process will not take, their agent type being one
   * it has no runner for. The API refuses to queue a type it does not know (422), so such tasks come from
   * a process with an extension this one lacks (src/extensions.ts is the one list both should load), or
   * from an extension since removed. They are not failed: they wait for a worker that has the type, and
   * until then this warning is the operator's sign that none may.
   */
  private async reportTasksOfOtherTypes(agentTypes: readonly string[]): Promise<void> {
    try {
      const counts = await this.queue.countOtherTypes(agentTypes);
      if (!counts.length) return;
      const byType = new Map<string, string[]>();
      for (const { agentType, status, count } of counts) {
        byType.set(agentType, [...(byType.get(agentType) ?? []), `${count} ${status}`]);
      }
      const listed = [...byType].map(([type, parts]) => `"${type}" (${parts.join(', ')})`).join(', ');
      this.logger.warn(
        `tasks of agent types this process cannot run are left for other workers: ${listed}. ` +
          `Registered here: ${agentTypes.join(', ')}. Load the extension that registers them in every ` +
          `process (src/extensions.ts), or cancel the tasks.`,
      );
    } catch (error) {
      this.logger.warn(`could not count tasks of unregistered agent types: ${(error as Error).message}`);
    }
  }

  /** Until nudged (a task queued, a slot freed, shutdown) or, when given, `ms` passed. */
  private idle(ms: number | undefined): Promise<void> {
    if (this.nudged) {
      this.nudged = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(() => wakeUp(), ms);
      timer?.unref();
      const wakeUp = (): void => {
        if (timer) clearTimeout(timer);
        this.nudge = () => (this.nudged = true);
        resolve();
      };
      this.nudge = wakeUp;
    });
  }

  private start(task: Task): void {
    const execution = this.execute(task)
      // A database error while recording the outcome must not stop the worker (or the process): the
      // lease then expires and the task is taken up again.
      .catch((error: unknown) => this.logger.error(`task ${task.id}: ${(error as Error).message}`))
      .finally(() => {
        this.executions.delete(execution);
        this.nudge();
      });
    this.executions.add(execution);
  }

  private async execute(task: Task): Promise<void> {
    const controller = new AbortController();
    this.running.set(task.id, controller);
    // One renewal in flight per task: while the database is slow (a lock, a busy moment) the interval
    // keeps firing, and renewals that pile up would each hold a pooled connection that requests need.
    let renewing: Promise<void> | undefined;
    const heartbeat = setInterval(
      () => {
        renewing ??= this.renewLease(task.id, controller).finally(() => (renewing = undefined));
      },
      Math.max(50, this.config.leaseMs / HEARTBEATS_PER_LEASE),
    );
    try {
      const result = await this.run(task, controller.signal);
      await this.finish(task, { status: 'succeeded', result });
    } catch (error) {
      if (controller.signal.aborted) return; // cancelled, lease lost, or handed back at shutdown
      const failure =
        error instanceof AgentFailure
          ? error
          : new AgentFailure('agent_crashed', (error as Error).message, true);
      if (failure.retryable && task.attempts < task.maxAttempts) await this.retryLater(task, failure);
      else
        await this.finish(task, {
          status: 'failed',
          error: { code: failure.code, message: failure.message },
        });
    } finally {
      clearInterval(heartbeat);
      this.running.delete(task.id);
    }
  }

  private async run(task: Task, signal: AbortSignal): Promise<unknown> {
    const runner = this.runners.get(task.agentType);
    // Not claimed by this worker (claimBatch takes registered types only); kept as the last guard.
    if (!runner) throw new AgentFailure('unknown_agent_type', `no agent type "${task.agentType}"`, false);
    const agent = task.agentId
      ? await this.agents.findInOrganization(task.organizationId, task.agentId)
      : null;
    if (runner.needsAgent && !agent)
      throw new AgentFailure('agent_not_found', "the task's agent was deleted", false);
    // A runner that calls out gets a token of this attempt, whatever hide_credentials says (which
    // decides only whether the caller's key travels too); it dies with the attempt (TaskTokens).
    const [attachments, taskToken] = await Promise.all([
      this.files.findOwned(task.organizationId, task.attachments),
      runner.forwardsCredentials === false
        ? undefined
        : this.tokens.mint({ taskId: task.id, attempt: task.attempts, leaseOwner: this.workerId }),
    ]);
    const key = task.sealedCredential ? this.tasks.credentials.open(task.sealedCredential) : undefined;
    return runner.run({
      task: { id: task.id, organizationId: task.organizationId, instruction: task.instruction, attachments },
      agent,
      outboundHeaders: {
        ...(key ? { 'X-API-Key': key } : {}),
        ...(taskToken ? { [TASK_TOKEN_HEADER]: taskToken } : {}),
      },
      taskToken,
      signal,
    });
  }

  /** Extends the lease; when the task was cancelled or taken over, aborts the agent. */
  private async renewLease(taskId: string, controller: AbortController): Promise<void> {
    try {
      if (!(await this.queue.renew(taskId, this.workerId, this.config.leaseMs))) controller.abort();
    } catch (error) {
      this.logger.warn(`lease renewal of ${taskId} failed: ${(error as Error).message}`);
    }
  }

  private async retryLater(task: Task, failure: AgentFailure): Promise<void> {
    const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (task.attempts - 1)) * (0.5 + Math.random() / 2);
    await this.queue.retry(task.id, this.workerId, backoff, {
      status: 'failed',
      error: { code: failure.code, message: failure.message },
    });
  }

  /** Records the outcome and its event together, only if this worker still owns the task. */
  private finish(task: Task, outcome: TaskOutcome): Promise<void> {
    return this.outcomes.add({ task, outcome });
  }

  /**
   * One transaction for the outcomes that finished together; an event for each that took effect, and
   * word to the requests that wait on them (TaskChanges).
   */
  private async recordOutcomes(batch: FinishedTask[]): Promise<void> {
    const finished = await this.queue.finishMany(
      this.workerId,
      batch.map(({ task, outcome }) => ({ taskId: task.id, outcome })),
      (manager, finished) => {
        const usageOf = new Map(finished.map((row) => [row.id, row.usage]));
        return this.events.record(
          manager,
          batch
            .filter(({ task }) => usageOf.has(task.id))
            .map(({ task, outcome }) => {
              const ended = { task_id: task.id, agent_type: task.agentType, usage: usageOf.get(task.id)! };
              return {
                organizationId: task.organizationId,
                type: `task.${outcome.status}`,
                data:
                  outcome.status === 'failed'
                    ? ({ ...ended, error: outcome.error } satisfies TaskFailedData)
                    : (ended satisfies TaskEndedData),
              };
            }),
        );
      },
    );
    this.changes.changed(finished.map((row) => row.id));
  }

  /** First phase of shutdown: the database is still open to finish or hand back work. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    this.stopListening();
    this.nudge();
    await this.dispatcher;
    const grace = new Promise<'timeout'>((resolve) =>
      setTimeout(() => resolve('timeout'), this.lifecycle.shutdownGraceMs / 2).unref(),
    );
    if ((await Promise.race([Promise.all(this.executions), grace])) === 'timeout') {
      for (const [taskId, controller] of this.running) {
        controller.abort();
        // Hand back: another worker takes it up at once, without counting this attempt.
        await this.queue.handBack(taskId, this.workerId).catch(() => undefined);
      }
    }
  }
}

interface FinishedTask {
  task: Task;
  outcome: TaskOutcome;
}
