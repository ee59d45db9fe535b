import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, In, Repository } from 'typeorm';
import { Page, paginate, ListQueryDto } from '../common/pagination';
import { TickBatch } from '../common/tick-batch';
import { Task } from './task.entity';

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
@Injectable()
export class TaskQueueRepository {
  constructor(
    @InjectRepository(Task) private readonly tasks: Repository<Task>,
    private readonly dataSource: DataSource,
  ) {}

  newTask(fields: Partial<Task>): Task {
    return this.tasks.create(fields);
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
                          attempts, max_attempts, idempotency_key, sealed_credential, created_by)
       SELECT t.id, t.organization_id, t.instruction, t.agent_type, t.agent_id,
              ARRAY(SELECT jsonb_array_elements_text(t.attachments)), 'queued', 0, t.max_attempts,
              t.idempotency_key, t.sealed_credential, t.created_by
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::int[],
                     $8::text[], $9::text[], $10::text[])
           AS t(id, organization_id, instruction, agent_type, agent_id, attachments, max_attempts,
                idempotency_key, sealed_credential, created_by)
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

  page(organizationId: string, status: Task['status'] | undefined, query: ListQueryDto): Promise<Page<Task>> {
    const builder = this.tasks
      .createQueryBuilder('task')
      .where('task.organization_id = :organizationId', { organizationId });
    if (status) builder.andWhere('task.status = :status', { status });
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
      `UPDATE tasks SET lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
        WHERE id = ANY($1::text[]) AND lease_owner = $2 AND status = 'running' RETURNING id`,
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
    along: (manager: EntityManager, finishedIds: string[]) => Promise<void>,
  ): Promise<string[]> {
    return this.dataSource.transaction(async (manager) => {
      const [rows] = await manager.query<[{ id: string }[], number]>(
        `UPDATE tasks SET status = o.status, result = o.result, error = o.error, completed_at = now(),
                updated_at = now(), lease_owner = NULL, lease_expires_at = NULL, sealed_credential = NULL
           FROM unnest($2::text[], $3::text[], $4::jsonb[], $5::jsonb[]) AS o(id, status, result, error)
          WHERE tasks.id = o.id AND tasks.lease_owner = $1 AND tasks.status = 'running'
          RETURNING tasks.id`,
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
      const finishedIds = rows.map((row) => row.id);
      if (finishedIds.length) await along(manager, finishedIds);
      return finishedIds;
    });
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
      const [rows] = await manager.query<[unknown[], number]>(
        `UPDATE tasks SET status = 'cancelled', completed_at = now(), updated_at = now(),
                lease_owner = NULL, lease_expires_at = NULL, sealed_credential = NULL
          WHERE id = $1 AND status IN ('queued', 'running')
          RETURNING id`,
        [taskId],
      );
      if (!rows.length) return false;
      await along(manager);
      return true;
    });
  }
}
