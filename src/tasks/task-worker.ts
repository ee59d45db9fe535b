import { ConfigOf } from '../config/config-namespace';
import { lifecycleConfig, tasksConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AgentFailure, AgentRunners } from '../agents/agent-runner';
import { Semaphore } from '../common/semaphore';
import { TickBatch } from '../common/tick-batch';
import type { TaskEndedData, TaskFailedData } from '../events/event-payloads.dto';
import { EventsService } from '../events/events.service';
import { AgentRunContexts } from './agent-run-contexts';
import { AgentRunSlots, maxConcurrencyOf } from './agent-run-slots';
import { TaskOutcome, TaskQueueRepository } from './task-queue.repository';
import { Task } from './task.entity';
import { TaskChanges } from './task-changes';
import { TaskWakeups } from './task-wakeups';
import { contextOf, counter, inSpan, tracingOn } from '../telemetry/telemetry';

const MAX_BACKOFF_MS = 60_000;
// At most this many tasks claimed in one statement.
const CLAIM_BATCH = 64;
// Renewals per lease: three may fail (a slow database moment) before a healthy task loses its lease.
const HEARTBEATS_PER_LEASE = 4;
// A running task's change is acted on within this (plus a statement): cancellations abort within a second.
const CHANGE_CHECK_MS = 250;

/**
 * The durable queue's consumer. One dispatcher keeps up to WORKER_CONCURRENCY tasks in flight (agents
 * are I/O-bound: hundreds of runs wait on their agents at once): it claims as many as there are free
 * slots in one statement (FOR UPDATE SKIP LOCKED: queued and due, or running with an expired lease, its
 * worker died; of the agent types it has a runner for, so a type only another process has is left to
 * that one; of no agent at its `max_concurrency` here), and sleeps only when the queue is empty, until
 * a task is queued (TaskWakeups) or WORKER_POLL_MS passes. Each task holds a lease; one heartbeat renews
 * the leases of all running tasks in one statement, and aborts those this worker no longer owns (a
 * cancellation, or a lost lease, is noticed within one heartbeat). Outcomes finishing together are
 * recorded in one transaction, each only while this worker still owns the lease, so an outcome is
 * recorded once. Failures are retried with exponential backoff and jitter up to TASK_MAX_ATTEMPTS. The
 * worker's statements go through a few connections of the pool (WORKER_DATABASE_CONNECTIONS), however many
 * runs are in flight. On shutdown it stops claiming, gives running tasks the grace period, then hands
 * the rest back to the queue.
 */
@Injectable()
export class TaskWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('TaskWorker');
  readonly workerId = `worker_${randomUUID()}`;
  private stopping = false;
  private dispatcher?: Promise<void>;
  private readonly running = new Map<string, AbortController>();
  private readonly executions = new Set<Promise<void>>();
  private readonly agentSlots = new AgentRunSlots();
  /** The worker's statements in flight: its share of the pool, whatever the runs in flight. */
  private readonly connections: Semaphore;
  private heartbeat?: NodeJS.Timeout;
  /** One renewal in flight: while the database is slow, ticks that pile up would each want a connection. */
  private renewing?: Promise<void>;
  /** The renewal a change of a running task asked for, and when the last one ran. */
  private changeCheck?: NodeJS.Timeout;
  private lastChangeCheck = 0;
  /** Task runs recorded as ended, by status and agent type (an OTLP metric, with telemetry on). */
  private readonly tasksFinished = counter(
    'gatehouse.tasks.finished',
    'Task runs recorded as succeeded or failed',
  );
  /** Ends the dispatcher's current wait (a task was queued, a slot came free); remembered if none. */
  private nudge: () => void = () => (this.nudged = true);
  private nudged = false;
  private stopListening: () => void = () => undefined;
  /**
   * Outcomes finishing in the same turn of the event loop are recorded in one transaction, two such
   * transactions at most at once: the outcomes that come while both run wait for the next (a wave of
   * model runs ending over 50 ms takes a few transactions, not one each; bench:llm).
   */
  private readonly outcomes = new TickBatch<FinishedTask, void>(async (batch) => {
    await this.recordOutcomes(batch);
    return batch.map(() => undefined);
  }, 2);

  constructor(
    @Inject(tasksConfig.KEY) private readonly config: ConfigOf<typeof tasksConfig>,
    @Inject(lifecycleConfig.KEY) private readonly lifecycle: ConfigOf<typeof lifecycleConfig>,
    private readonly queue: TaskQueueRepository,
    private readonly runners: AgentRunners,
    private readonly contexts: AgentRunContexts,
    private readonly events: EventsService,
    private readonly wakeups: TaskWakeups,
    private readonly changes: TaskChanges,
  ) {
    this.connections = new Semaphore(this.config.databaseConnections);
  }

  onApplicationBootstrap(): void {
    if (this.config.workerConcurrency === 0) return;
    this.stopListening = this.wakeups.onWake(() => this.nudge());
    this.heartbeat = setInterval(
      () => {
        this.renewing ??= this.renewLeases().finally(() => (this.renewing = undefined));
      },
      Math.max(50, this.config.leaseMs / HEARTBEATS_PER_LEASE),
    );
    this.dispatcher = this.dispatch();
  }

  /** A statement of the worker's, on its share of the pool (its runs' reports too). */
  private readonly db = <T>(statement: () => Promise<T>): Promise<T> => this.connections.use(statement);

  private async dispatch(): Promise<void> {
    // Every module's onModuleInit has run (runners register there): the types are final.
    const agentTypes = this.runners.types();
    await this.reportTasksOfOtherTypes(agentTypes);
    // With hundreds of runs in flight, a claim for every run that ends would be two statements per task:
    // the dispatcher claims once a worthwhile batch of slots is free (an eighth of them, at most a full
    // batch), or once WORKER_POLL_MS has passed since its last claim with any slot free, so a slot waits
    // at most that long while long runs hold the others.
    const worthClaiming = Math.min(CLAIM_BATCH, Math.ceil(this.config.workerConcurrency / 8));
    let lastClaim = 0;
    while (!this.stopping) {
      const free = this.config.workerConcurrency - this.running.size;
      const sinceClaim = Date.now() - lastClaim;
      const claiming = free >= worthClaiming || (free > 0 && sinceClaim >= this.config.pollMs);
      let claimed: Task[] = [];
      if (claiming) {
        lastClaim = Date.now();
        try {
          const atCap = this.agentSlots.atCap();
          claimed = await this.db(() =>
            this.queue.claimBatch(
              this.workerId,
              this.config.leaseMs,
              Math.min(free, CLAIM_BATCH),
              agentTypes,
              atCap,
            ),
          );
        } catch (error) {
          this.logger.warn(`claim failed: ${(error as Error).message}`);
        }
      }
      if (claimed.length)
        this.changes.changed(
          claimed.map((task) => task.id),
          'events',
        );
      const tokens = await this.contexts.mintTokens(claimed, this.workerId, this.db);
      if (tokens) for (const task of claimed) this.start(task, tokens.get(task.id));
      // Claim again at once while the queue gives all that was asked; otherwise wait for a nudge (a task
      // queued, a run ended), or for the poll: the queue may hold work that is due later, or a slot free
      // below the batch threshold waits for its turn.
      if (claiming && claimed.length === Math.min(free, CLAIM_BATCH)) continue;
      if (claiming) await this.idle(this.config.pollMs);
      else await this.idle(free > 0 ? this.config.pollMs - sinceClaim : undefined);
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
      const counts = await this.db(() => this.queue.countOtherTypes(agentTypes));
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

  private start(task: Task, taskToken: string | undefined): void {
    // With tracing on, the run is a span of the trace of the request that made the task (kept with it).
    const run = tracingOn()
      ? inSpan(
          'task.run',
          contextOf(task.traceParent),
          {
            'gatehouse.task_id': task.id,
            'gatehouse.agent_type': task.agentType,
            'gatehouse.attempt': task.attempts,
          },
          () => this.execute(task, taskToken),
        )
      : this.execute(task, taskToken);
    const execution = run
      // A database error while recording the outcome must not stop the worker (or the process): the
      // lease then expires and the task is taken up again.
      .catch((error: unknown) => this.logger.error(`task ${task.id}: ${(error as Error).message}`))
      .finally(() => {
        this.executions.delete(execution);
        this.nudge();
      });
    this.executions.add(execution);
  }

  private async execute(task: Task, taskToken: string | undefined): Promise<void> {
    const controller = new AbortController();
    this.running.set(task.id, controller);
    // A change of the task (its cancellation, a takeover) is checked within CHANGE_CHECK_MS rather than
    // at the next heartbeat, so its run (an upstream model stream, say) is aborted within the second.
    const unsubscribe = this.changes.subscribe(task.id, () => this.checkLeasesSoon(), { endsOnly: true });
    try {
      const result = await this.run(task, taskToken, controller.signal);
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
      unsubscribe();
      if (this.running.get(task.id) === controller) this.running.delete(task.id);
    }
  }

  /**
   * A renewal soon, at most one per CHANGE_CHECK_MS whatever the events: a streaming run changes its
   * task every few milliseconds, and one statement renews (and checks) every running task at once.
   */
  private checkLeasesSoon(): void {
    if (this.changeCheck || this.stopping) return;
    const wait = Math.max(0, this.lastChangeCheck + CHANGE_CHECK_MS - Date.now());
    this.changeCheck = setTimeout(() => {
      this.changeCheck = undefined;
      this.lastChangeCheck = Date.now();
      this.renewing ??= this.renewLeases().finally(() => (this.renewing = undefined));
    }, wait);
    this.changeCheck.unref();
  }

  private async run(task: Task, taskToken: string | undefined, signal: AbortSignal): Promise<unknown> {
    const run = await this.contexts.prepare({ task, workerId: this.workerId, taskToken, signal }, this.db);
    try {
      // An agent that caps its runs: wait here (leased, the lease renewed) for one of its slots.
      const { agent } = run.context;
      const cap = agent ? maxConcurrencyOf(agent.config) : undefined;
      const release = agent && cap ? await this.agentSlots.acquire(agent.id, cap, signal) : undefined;
      try {
        return await run.runner.run(run.context);
      } finally {
        release?.();
      }
    } finally {
      // The outcome is recorded after the reports the run made.
      await run.end();
    }
  }

  /**
   * Extends the leases of every running task in one statement; aborts the runs whose task was cancelled,
   * finished elsewhere or taken over (this worker no longer owns it).
   */
  private async renewLeases(): Promise<void> {
    const taskIds = [...this.running.keys()];
    if (!taskIds.length) return;
    try {
      const owned = new Set(
        await this.db(() => this.queue.renewMany(taskIds, this.workerId, this.config.leaseMs)),
      );
      for (const taskId of taskIds) if (!owned.has(taskId)) this.running.get(taskId)?.abort();
    } catch (error) {
      this.logger.warn(`lease renewal of ${taskIds.length} tasks failed: ${(error as Error).message}`);
    }
  }

  private async retryLater(task: Task, failure: AgentFailure): Promise<void> {
    const exponential = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (task.attempts - 1)) * (0.5 + Math.random() / 2);
    // The agent's own word on when to come back (an upstream's Retry-After), never past the cap.
    const backoff = Math.min(MAX_BACKOFF_MS, Math.max(exponential, failure.retryAfterMs ?? 0));
    await this.db(() =>
      this.queue.retry(task.id, this.workerId, backoff, {
        status: 'failed',
        error: { code: failure.code, message: failure.message },
      }),
    );
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
    const finished = await this.db(() =>
      this.queue.finishMany(
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
      ),
    );
    this.changes.changed(
      finished.map((row) => row.id),
      'end',
    );
    const recorded = new Set(finished.map((row) => row.id));
    for (const { task, outcome } of batch) {
      if (recorded.has(task.id))
        this.tasksFinished.add(1, { status: outcome.status, agent_type: task.agentType });
    }
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
      const taskIds = [...this.running.keys()];
      for (const taskId of taskIds) this.running.get(taskId)?.abort();
      // Hand back: another worker takes them up at once, without counting this attempt.
      await this.db(() => this.queue.handBackMany(taskIds, this.workerId)).catch(() => undefined);
    }
    clearInterval(this.heartbeat);
    clearTimeout(this.changeCheck);
    await this.renewing;
  }
}

interface FinishedTask {
  task: Task;
  outcome: TaskOutcome;
}
