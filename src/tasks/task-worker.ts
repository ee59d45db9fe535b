import { ConfigOf } from '../config/config-namespace';
import { lifecycleConfig, tasksConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentFailure, AgentRunners } from '../agents/agent-runner';
import { AgentsService } from '../agents/agents.service';
import { EventsService } from '../events/events.service';
import { FilesService } from '../files/files.service';
import { TaskOutcome, TaskQueueRepository } from './task-queue.repository';
import { Task } from './task.entity';
import { TasksService } from './tasks.service';

const MAX_BACKOFF_MS = 60_000;
// Renewals per lease: three may fail (a slow database moment) before a healthy task loses its lease.
const HEARTBEATS_PER_LEASE = 4;

/**
 * The durable queue's consumer. Each of WORKER_CONCURRENCY loops claims one task at a time with
 * FOR UPDATE SKIP LOCKED (queued and due, or running with an expired lease: its worker died), holds
 * a lease it renews while the agent runs, and records the outcome only while it still owns the
 * lease. Failures are retried with exponential backoff and jitter up to TASK_MAX_ATTEMPTS. A
 * cancellation (or a lost lease) aborts the running agent at the next heartbeat. On shutdown it stops
 * claiming, gives running tasks the grace period, then hands the rest back to the queue.
 */
@Injectable()
export class TaskWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('TaskWorker');
  readonly workerId = `worker_${randomUUID()}`;
  private stopping = false;
  private loops: Promise<void>[] = [];
  private readonly running = new Map<string, AbortController>();

  constructor(
    @Inject(tasksConfig.KEY) private readonly config: ConfigOf<typeof tasksConfig>,
    @Inject(lifecycleConfig.KEY) private readonly lifecycle: ConfigOf<typeof lifecycleConfig>,
    private readonly queue: TaskQueueRepository,
    private readonly runners: AgentRunners,
    private readonly agents: AgentsService,
    private readonly files: FilesService,
    private readonly tasks: TasksService,
    private readonly events: EventsService,
  ) {}

  onApplicationBootstrap(): void {
    for (let i = 0; i < this.config.workerConcurrency; i++) this.loops.push(this.loop());
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      let task: Task | undefined;
      try {
        task = await this.claim();
      } catch (error) {
        this.logger.warn(`claim failed: ${(error as Error).message}`);
      }
      if (task) {
        // A database error while recording the outcome must not kill the loop (or the process): the
        // lease then expires and the task is taken up again.
        await this.execute(task).catch((error: unknown) =>
          this.logger.error(`task ${task!.id}: ${(error as Error).message}`),
        );
      } else await sleep(this.config.pollMs, undefined, { ref: false });
    }
  }

  /** Claims the oldest due task, or one whose lease expired; undefined when there is none. */
  claim(): Promise<Task | undefined> {
    return this.queue.claim(this.workerId, this.config.leaseMs);
  }

  private async execute(task: Task): Promise<void> {
    const controller = new AbortController();
    this.running.set(task.id, controller);
    const heartbeat = setInterval(
      () => void this.renewLease(task.id, controller),
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
    if (!runner) throw new AgentFailure('unknown_agent_type', `no agent type "${task.agentType}"`, false);
    const agent = task.agentId
      ? await this.agents.findInOrganization(task.organizationId, task.agentId)
      : null;
    if (runner.needsAgent && !agent)
      throw new AgentFailure('agent_not_found', "the task's agent was deleted", false);
    const attachments = await this.files.findOwned(task.organizationId, task.attachments);
    const key = task.sealedCredential ? this.tasks.credentials.open(task.sealedCredential) : undefined;
    return runner.run({
      task: { id: task.id, organizationId: task.organizationId, instruction: task.instruction, attachments },
      agent,
      outboundHeaders: key ? { 'X-API-Key': key } : {},
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
  private async finish(task: Task, outcome: TaskOutcome): Promise<void> {
    await this.queue.finish(task.id, this.workerId, outcome, (manager) =>
      this.events.record(manager, [
        {
          organizationId: task.organizationId,
          type: `task.${outcome.status}`,
          data: {
            task_id: task.id,
            agent_type: task.agentType,
            ...(outcome.status === 'failed' ? { error: outcome.error } : {}),
          },
        },
      ]),
    );
  }

  /** First phase of shutdown: the database is still open to finish or hand back work. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    const grace = new Promise<'timeout'>((resolve) =>
      setTimeout(() => resolve('timeout'), this.lifecycle.shutdownGraceMs / 2).unref(),
    );
    if ((await Promise.race([Promise.all(this.loops), grace])) === 'timeout') {
      for (const [taskId, controller] of this.running) {
        controller.abort();
        // Hand back: another worker takes it up at once, without counting this attempt.
        await this.queue.handBack(taskId, this.workerId).catch(() => undefined);
      }
    }
  }
}
