import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, In, Repository } from 'typeorm';
import { Page, paginate, ListQueryDto } from '../common/pagination';
import { TickBatch } from '../common/tick-batch';
import { Task } from './task.entity';
import { BUDGET_EXCEEDED } from './task-costs';
import type { CreditAccount } from '../api-keys/credits/credit-ledger';
import { ReservationSettlement } from '../api-keys/credits/reservation-settlement';
import { API_KEY_ID } from '../api-keys/api-keys.declarations';
import { isIdOf } from '../common/ids';
import { TaskRunMeter } from '../usage/task-run-meter';

/** What a finished task records: its result, or why it failed. */
export type TaskOutcome =
  { status: 'succeeded'; result: unknown } | { status: 'failed'; error: { code: string; message: string } };

/** One of a task's events (the task_events table: status changes, written by triggers). */
export interface TaskEventRow {
  seq: number;
  type: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

/** What a list of an organization's tasks may be narrowed to. */
export interface TaskFilter {
  status?: Task['status'];
  agentId?: string;
  /** An A2A conversation: the tasks made in it. */
  contextId?: string;
}

/**
 * The attempt a worker's own report is for: appended only while it is still the task's running one
 * (its attempt number, its lease held by that worker and not run out), as a task token is checked.
 */
export interface RunningAttempt {
  attempts: number;
  leaseOwner: string;
}

/**
 * SQL: the running tasks among the ids of `idsParam` that meet `condition`, locked in the order of their
 * ids. The statements that change several running tasks at once (a heartbeat's renewal of every lease,
 * the outcomes recorded together) lock them in this one order: each in an order of its own (the array's,
 * the scan's), two of them of one worker deadlocked now and then under load, and PostgreSQL ended one
 * (a run's outcome then failed and was retried as `agent_crashed`).
 */
const lockedInIdOrder = (idsParam: string, condition: string): string =>
  `SELECT id FROM tasks WHERE id = ANY(${idsParam}::text[]) AND status = 'running' AND ${condition}
    ORDER BY id FOR UPDATE`;

/**
 * What a run costs when it ends, in SQL (the same rounding as costOf in task-costs.ts), never more than
 * what it reserved.
 */
const SETTLED_COST = `LEAST(tasks.max_credits, CEIL(tasks.input_tokens / 1000.0 * tasks.credits_per_1k_input_tokens
  + tasks.output_tokens / 1000.0 * tasks.credits_per_1k_output_tokens - 1e-9))::int`;

/** A task a worker just finished, with what its run used and cost (as its webhook event carries it). */
export interface FinishedTaskRow {
  id: string;
  usage: { input_tokens: number; output_tokens: number; credits: number };
  organizationId: string;
  /** The key (`key_…`) or user that created the task. */
  createdBy: string | null;
  /** Whether its max_credits were reserved from the key's balance (what it cost was taken from it). */
  reserved: boolean;
}

/** What every statement that ends a task answers (FinishedTaskRow), for its settlement and usage. */
const ENDED_TASK_COLUMNS = `tasks.id, tasks.organization_id AS "organizationId", tasks.created_by AS "createdBy",
  json_build_object('input_tokens', tasks.input_tokens, 'output_tokens', tasks.output_tokens,
                    'credits', tasks.credits_charged) AS usage,
  tasks.credit_reservation IS NOT NULL AS reserved`;

/** Work to do in the same transaction as a state change that took effect (its event, say). */
export type AlongWithChange = (manager: EntityManager) => Promise<void>;

/**
 * The tasks table, which is also the queue: every query on it, and the one place task states change.
 *
 *   queued --claim--> running --finish--> succeeded | failed
 *             ^          |  \\--retry (backoff)--> queued
 *             |          \\--handBack (shutdown)--> queued (attempt not counted)
 *   queued | running --cancel--> cancelled
 *
 * A worker's changes hold only while it owns the lease (`lease_owner`, status running), so a worker
 * that lost its lease (it stalled, the task was cancelled or taken over) changes nothing.
 */

/**
 * A task's reserved accounts as a JSON array: rows written before identities hold one account as an
 * object, later ones an array (the key's balance, its identity's, or both).
 */
const RESERVED_ACCOUNTS = `CASE jsonb_typeof(credit_reservation) WHEN 'array' THEN credit_reservation
                                ELSE jsonb_build_array(credit_reservation) END`;

@Injectable()
export class TaskQueueRepository {
  constructor(
    @InjectRepository(Task) private readonly tasks: Repository<Task>,
    private readonly dataSource: DataSource,
    private readonly settlement: ReservationSettlement,
    private readonly usage: TaskRunMeter,
  ) {}

  /** A task to insert: `fields` over the state of a task nobody ran yet (no usage, nothing reserved). */
  newTask(fields: Partial<Task>): Task {
    return this.tasks.create({
      maxCredits: 0,
      creditsPer1kInputTokens: 0,
      creditsPer1kOutputTokens: 0,
      creditReservation: null,
      inputTokens: 0,
      outputTokens: 0,
      progress: null,
      outputFiles: [],
      creditsCharged: null,
      creditsRefund: null,
      creditsRefundState: null,
      ...fields,
    });
  }

  /**
   * Queues a task; false when its organization already has a task under its idempotency key (nothing
   * is written then). Tasks queued in the same turn of the event loop go in one INSERT: one round trip,
   * one commit and one NOTIFY (the statement trigger) for all of them. The defaults (timestamps) come
   * back through RETURNING.
   */
  insert(task: Task): Promise<boolean> {
    return this.inserts.add(task);
  }

  private readonly inserts = new TickBatch<Task, boolean>((tasks) => this.insertMany(tasks));

  private async insertMany(tasks: Task[]): Promise<boolean[]> {
    // ON CONFLICT on the idempotency index only: two requests under one key (in this batch or not)
    // queue one task, and the other learns it from the missing row, not from a failed statement that
    // would fail the whole batch.
    const rows = await this.dataSource.query<
      { id: string; run_after: Date; created_at: Date; updated_at: Date }[]
    >(
      `INSERT INTO tasks (id, organization_id, instruction, agent_type, agent_id, attachments, status,
                          attempts, max_attempts, idempotency_key, sealed_credential, created_by,
                          max_credits, credits_per_1k_input_tokens, credits_per_1k_output_tokens,
                          credit_reservation, context_id, trace_parent)
       SELECT t.id, t.organization_id, t.instruction, t.agent_type, t.agent_id,
              ARRAY(SELECT jsonb_array_elements_text(t.attachments)), 'queued', 0, t.max_attempts,
              t.idempotency_key, t.sealed_credential, t.created_by, t.max_credits, t.price_in, t.price_out,
              t.credit_reservation, t.context_id, t.trace_parent
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::int[],
                     $8::text[], $9::text[], $10::text[], $11::int[], $12::float8[], $13::float8[],
                     $14::jsonb[], $15::text[], $16::text[])
           AS t(id, organization_id, instruction, agent_type, agent_id, attachments, max_attempts,
                idempotency_key, sealed_credential, created_by, max_credits, price_in, price_out,
                credit_reservation, context_id, trace_parent)
       ON CONFLICT (organization_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
       RETURNING id, run_after, created_at, updated_at`,
      [
        tasks.map((task) => task.id),
        tasks.map((task) => task.organizationId),
        tasks.map((task) => task.instruction),
        tasks.map((task) => task.agentType),
        tasks.map((task) => task.agentId),
        tasks.map((task) => JSON.stringify(task.attachments)),
        tasks.map((task) => task.maxAttempts),
        tasks.map((task) => task.idempotencyKey),
        tasks.map((task) => task.sealedCredential),
        tasks.map((task) => task.createdBy),
        tasks.map((task) => task.maxCredits),
        tasks.map((task) => task.creditsPer1kInputTokens),
        tasks.map((task) => task.creditsPer1kOutputTokens),
        tasks.map((task) => (task.creditReservation ? JSON.stringify(task.creditReservation) : null)),
        tasks.map((task) => task.contextId ?? null),
        tasks.map((task) => task.traceParent ?? null),
      ],
    );
    const inserted = new Map(rows.map((row) => [row.id, row]));
    return tasks.map((task) => {
      const row = inserted.get(task.id);
      if (!row) return false;
      task.status = 'queued';
      task.attempts = 0;
      task.runAfter = row.run_after;
      task.createdAt = row.created_at;
      task.updatedAt = row.updated_at;
      return true;
    });
  }

  findInOrganization(organizationId: string, id: string): Promise<Task | null> {
    return this.tasks.findOneBy({ id, organizationId });
  }

  findByIdempotencyKey(organizationId: string, idempotencyKey: string): Promise<Task | null> {
    return this.tasks.findOneBy({ organizationId, idempotencyKey });
  }

  page(organizationId: string, filter: TaskFilter, query: ListQueryDto): Promise<Page<Task>> {
    const builder = this.tasks
      .createQueryBuilder('task')
      .where('task.organization_id = :organizationId', { organizationId });
    if (filter.status) builder.andWhere('task.status = :status', { status: filter.status });
    if (filter.agentId) builder.andWhere('task.agent_id = :agentId', { agentId: filter.agentId });
    if (filter.contextId) builder.andWhere('task.context_id = :contextId', { contextId: filter.contextId });
    return paginate(builder, query);
  }

  /** A task's events after `afterSeq`, oldest first, at most `limit`. */
  eventsAfter(taskId: string, afterSeq: number, limit: number): Promise<TaskEventRow[]> {
    return this.dataSource.query(
      `SELECT seq, type, data, created_at AS "createdAt" FROM task_events
        WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [taskId, afterSeq, limit],
    );
  }

  /** A task's output deltas joined in order. */
  async outputText(taskId: string): Promise<string> {
    const [row] = await this.dataSource.query<{ text: string | null }[]>(
      `SELECT string_agg(data->>'delta', '' ORDER BY seq) AS text FROM task_events
        WHERE task_id = $1 AND type = 'output'`,
      [taskId],
    );
    return row?.text ?? '';
  }

  /** A task's last event (undefined for none): the end of its primary key's range. */
  async lastEvent(taskId: string): Promise<TaskEventRow | undefined> {
    const [row] = await this.dataSource.query<TaskEventRow[]>(
      `SELECT seq, type, data, created_at AS "createdAt" FROM task_events
        WHERE task_id = $1 ORDER BY seq DESC LIMIT 1`,
      [taskId],
    );
    return row;
  }

  /**
   * Ends a running task whose reported usage passed its reservation: failed, `budget_exceeded`, charged
   * all it reserved; `along` runs in the same transaction. False when it was no longer running.
   */
  failOverBudget(
    taskId: string,
    along: (manager: EntityManager, usage: FinishedTaskRow['usage']) => Promise<void>,
  ): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      const [rows] = await manager.query<[FinishedTaskRow[], number]>(
        `UPDATE tasks SET status = 'failed', error = $2, credits_charged = max_credits, completed_at = now(),
                updated_at = now(), lease_owner = NULL, lease_expires_at = NULL, sealed_credential = NULL
          WHERE id = $1 AND status = 'running'
          RETURNING ${ENDED_TASK_COLUMNS}`,
        [taskId, JSON.stringify(BUDGET_EXCEEDED)],
      );
      if (!rows.length) return false;
      await this.settleAndMeter(manager, rows);
      await along(manager, rows[0].usage);
      return true;
    });
  }

  /**
   * The last event number of each task (0 for none), in one statement: a look at the end of the primary
   * key's range per task, however many events the tasks hold.
   */
  async lastEventSeqs(taskIds: readonly string[]): Promise<Map<string, number>> {
    const rows = await this.dataSource.query<{ id: string; seq: number }[]>(
      `SELECT t.id, COALESCE((SELECT max(e.seq) FROM task_events e WHERE e.task_id = t.id), 0) AS seq
         FROM unnest($1::text[]) AS t(id)`,
      [taskIds],
    );
    return new Map(rows.map((row) => [row.id, Number(row.seq)]));
  }

  /** Which of these tasks (each of its organization) are no longer queued or running: one statement. */
  async endedAmong(tasks: readonly { id: string; organizationId: string }[]): Promise<string[]> {
    const rows = await this.dataSource.query<{ id: string }[]>(
      `SELECT t.id FROM tasks t
         JOIN unnest($1::text[], $2::text[]) AS w(id, organization_id)
           ON t.id = w.id AND t.organization_id = w.organization_id
        WHERE t.status NOT IN ('queued', 'running')`,
      [tasks.map((task) => task.id), tasks.map((task) => task.organizationId)],
    );
    return rows.map((row) => row.id);
  }

  /** The oldest due task, or one whose lease expired (its worker died), now running under `workerId`. */
  async claim(workerId: string, leaseMs: number): Promise<Task | undefined> {
    const [task] = await this.claimBatch(workerId, leaseMs, 1);
    return task;
  }

  /**
   * Up to `limit` of the oldest due tasks (or ones whose lease expired), now running under `workerId`,
   * in one statement; FOR UPDATE SKIP LOCKED lets workers claim side by side without waiting. With
   * `agentTypes`, only tasks of those types: a worker leaves a type it cannot run to one that can. With
   * `exceptAgentIds`, none of those agents' tasks (the worker's agents at their `max_concurrency`).
   */
  async claimBatch(
    workerId: string,
    leaseMs: number,
    limit: number,
    agentTypes?: readonly string[],
    exceptAgentIds: readonly string[] = [],
  ): Promise<Task[]> {
    const [rows] = await this.dataSource.query<[{ id: string }[], number]>(
      `UPDATE tasks SET status = 'running', lease_owner = $1,
              lease_expires_at = now() + make_interval(secs => $2::double precision / 1000),
              attempts = attempts + 1, started_at = COALESCE(started_at, now()), updated_at = now()
        WHERE id IN (SELECT id FROM tasks
                      WHERE ((status = 'queued' AND run_after <= now())
                          OR (status = 'running' AND lease_expires_at < now()))
                        AND ($4::text[] IS NULL OR agent_type = ANY($4::text[]))
                        AND (agent_id IS NULL OR agent_id <> ALL($5::text[]))
                      ORDER BY run_after
                      LIMIT $3
                      FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      [workerId, leaseMs, limit, agentTypes ?? null, exceptAgentIds],
    );
    if (!rows.length) return [];
    return this.tasks.findBy({ id: In(rows.map((row) => row.id)) });
  }

  /**
   * Queued and running tasks whose agent type is none of `agentTypes`, counted by type and status: the
   * work a worker with those types leaves for others (TaskWorker reports it at start).
   */
  countOtherTypes(
    agentTypes: readonly string[],
  ): Promise<{ agentType: string; status: 'queued' | 'running'; count: number }[]> {
    return this.dataSource.query(
      `SELECT agent_type AS "agentType", status, count(*)::int AS count
         FROM tasks
        WHERE status IN ('queued', 'running') AND agent_type <> ALL($1::text[])
        GROUP BY agent_type, status
        ORDER BY agent_type, status`,
      [agentTypes],
    );
  }

  /** Extends the lease; false when the worker no longer owns the task (cancelled or taken over). */
  async renew(taskId: string, workerId: string, leaseMs: number): Promise<boolean> {
    return (await this.renewMany([taskId], workerId, leaseMs)).length > 0;
  }

  /**
   * Extends the leases of all of `taskIds` the worker still owns, in one statement; returns those ids.
   * The others were cancelled, finished or taken over: their runs are to be aborted.
   */
  async renewMany(taskIds: readonly string[], workerId: string, leaseMs: number): Promise<string[]> {
    if (!taskIds.length) return [];
    const [rows] = await this.dataSource.query<[{ id: string }[], number]>(
      `WITH owned AS (${lockedInIdOrder('$1', 'lease_owner = $2')})
       UPDATE tasks SET lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
         FROM owned WHERE tasks.id = owned.id AND tasks.lease_owner = $2 AND tasks.status = 'running'
       RETURNING tasks.id`,
      [taskIds, workerId, leaseMs],
    );
    return rows.map((row) => row.id);
  }

  /** Back to the queue after a retryable failure, due again after `delayMs`. */
  async retry(taskId: string, workerId: string, delayMs: number, error: TaskOutcome & { status: 'failed' }) {
    const [rows] = await this.dataSource.query<[unknown[], number]>(
      `UPDATE tasks SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = now(),
              run_after = now() + make_interval(secs => $3::double precision / 1000), error = $4
        WHERE id = $1 AND lease_owner = $2 AND status = 'running' RETURNING id`,
      [taskId, workerId, delayMs, JSON.stringify(error.error)],
    );
    return rows.length > 0;
  }

  /**
   * Records the outcome, and runs `along` in the same transaction, only if the worker still owns the
   * task: an outcome is recorded once.
   */
  async finish(
    taskId: string,
    workerId: string,
    outcome: TaskOutcome,
    along: AlongWithChange,
  ): Promise<boolean> {
    const finished = await this.finishMany(workerId, [{ taskId, outcome }], (manager) => along(manager));
    return finished.length > 0;
  }

  /**
   * Records several outcomes in one transaction, each only if the worker still owns its task, and
   * runs `along` with the ids that took effect (their events go in the same transaction). Returns
   * those ids.
   */
  finishMany(
    workerId: string,
    outcomes: { taskId: string; outcome: TaskOutcome }[],
    along: (manager: EntityManager, finished: FinishedTaskRow[]) => Promise<void>,
  ): Promise<FinishedTaskRow[]> {
    return this.dataSource.transaction(async (manager) => {
      const [rows] = await manager.query<[FinishedTaskRow[], number]>(
        `WITH owned AS (${lockedInIdOrder('$2', 'lease_owner = $1')})
         UPDATE tasks SET status = o.status, result = o.result, error = o.error, completed_at = now(),
                updated_at = now(), lease_owner = NULL, lease_expires_at = NULL, sealed_credential = NULL,
                credits_charged = ${SETTLED_COST}
           FROM owned, unnest($2::text[], $3::text[], $4::jsonb[], $5::jsonb[]) AS o(id, status, result, error)
          WHERE tasks.id = owned.id AND tasks.id = o.id AND tasks.lease_owner = $1 AND tasks.status = 'running'
          RETURNING ${ENDED_TASK_COLUMNS}`,
        [
          workerId,
          outcomes.map((o) => o.taskId),
          outcomes.map((o) => o.outcome.status),
          outcomes.map((o) =>
            o.outcome.status === 'succeeded' ? JSON.stringify(o.outcome.result ?? null) : null,
          ),
          outcomes.map((o) => (o.outcome.status === 'failed' ? JSON.stringify(o.outcome.error) : null)),
        ],
      );
      if (rows.length) {
        await this.settleAndMeter(manager, rows);
        await along(manager, rows);
      }
      return rows;
    });
  }

  /**
   * In the transaction that ended `ended`: their reservations settled, and what they used added to
   * their creating keys' usage (tasks, tokens, credits spent), once.
   */
  private async settleAndMeter(manager: EntityManager, ended: readonly FinishedTaskRow[]): Promise<void> {
    const reserved = ended.filter((row) => row.reserved).map((row) => row.id);
    if (reserved.length) await this.settle(manager, reserved);
    await this.usage.record(
      manager,
      ended
        .filter((row) => row.createdBy !== null && isIdOf(API_KEY_ID, row.createdBy))
        .map((row) => ({
          organizationId: row.organizationId,
          keyId: row.createdBy!,
          inputTokens: Number(row.usage.input_tokens),
          outputTokens: Number(row.usage.output_tokens),
          creditsSpent: row.reserved ? Number(row.usage.credits) : 0,
        })),
    );
  }

  /**
   * Settles the reservations of tasks that just ended (credits_charged set), in the transaction that
   * ended them, once (`credits_refund_state` goes from null): what the run did not use goes back to a
   * balance the database holds now; one Redis holds is left `pending` for TaskCreditSettlements.
   */
  private async settle(manager: EntityManager, taskIds: string[]): Promise<void> {
    const [rows] = await manager.query<[{ accounts: CreditAccount[]; credits_refund: number }[], number]>(
      `UPDATE tasks SET credits_refund = max_credits - credits_charged,
              credits_refund_state = CASE WHEN EXISTS (
                                            SELECT 1 FROM jsonb_array_elements(${RESERVED_ACCOUNTS}) AS a(account)
                                             WHERE a.account->'takenFrom'->>'store' = 'redis')
                                           AND max_credits > credits_charged THEN 'pending' ELSE 'done' END
        WHERE id = ANY($1::text[]) AND credit_reservation IS NOT NULL AND credits_charged IS NOT NULL
          AND credits_refund_state IS NULL
        RETURNING ${RESERVED_ACCOUNTS} AS accounts, credits_refund`,
      [taskIds],
    );
    await this.settlement.giveBackInDatabase(
      manager,
      rows.flatMap((row) => row.accounts.map((account) => ({ account, count: row.credits_refund }))),
    );
  }

  /** Per balance Redis still owes a settled task its refund, oldest task first. */
  pendingRefunds(limit: number): Promise<{ id: string; account: CreditAccount; count: number }[]> {
    return this.dataSource.query(
      `SELECT t.id, a.account, t.credits_refund AS count
         FROM (SELECT id, ${RESERVED_ACCOUNTS} AS accounts, credits_refund, completed_at FROM tasks
                WHERE credits_refund_state = 'pending' ORDER BY completed_at LIMIT $1) AS t,
              jsonb_array_elements(t.accounts) AS a(account)
        WHERE a.account->'takenFrom'->>'store' = 'redis'
        ORDER BY t.completed_at, t.id`,
      [limit],
    );
  }

  async refundDone(taskId: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE tasks SET credits_refund_state = 'done' WHERE id = $1 AND credits_refund_state = 'pending'`,
      [taskId],
    );
  }

  /** At shutdown: back to the queue at once, without counting the attempt. */
  async handBack(taskId: string, workerId: string): Promise<boolean> {
    return (await this.handBackMany([taskId], workerId)).length > 0;
  }

  /** `handBack` of several tasks in one statement; returns the ids handed back (those still owned). */
  async handBackMany(taskIds: readonly string[], workerId: string): Promise<string[]> {
    if (!taskIds.length) return [];
    const [rows] = await this.dataSource.query<[{ id: string }[], number]>(
      `UPDATE tasks SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
              attempts = GREATEST(attempts - 1, 0), run_after = now(), updated_at = now()
        WHERE id = ANY($1::text[]) AND lease_owner = $2 AND status = 'running' RETURNING id`,
      [taskIds, workerId],
    );
    return rows.map((row) => row.id);
  }

  /** Cancels a queued or running task, and runs `along` in the same transaction; false if it finished. */
  cancel(taskId: string, along: AlongWithChange): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      const [rows] = await manager.query<[FinishedTaskRow[], number]>(
        `UPDATE tasks SET status = 'cancelled', completed_at = now(), updated_at = now(),
                lease_owner = NULL, lease_expires_at = NULL, sealed_credential = NULL,
                credits_charged = ${SETTLED_COST}
          WHERE id = $1 AND status IN ('queued', 'running')
          RETURNING ${ENDED_TASK_COLUMNS}`,
        [taskId],
      );
      if (!rows.length) return false;
      await this.settleAndMeter(manager, rows);
      await along(manager);
      return true;
    });
  }
}
