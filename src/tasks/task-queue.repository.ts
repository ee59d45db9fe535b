import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, Repository } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { Page, paginate, ListQueryDto } from '../common/pagination';
import { Task } from './task.entity';

/** What a finished task records: its result, or why it failed. */
export type TaskOutcome =
  { status: 'succeeded'; result: unknown } | { status: 'failed'; error: { code: string; message: string } };

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
   * One INSERT (its defaults come back through RETURNING): `save` would first SELECT the id in a
   * transaction of its own, four round trips where one does.
   */
  async insert(task: Task): Promise<Task> {
    // The entity's `unknown` JSON columns do not fit TypeORM's deep-partial type; the row is whole.
    await this.tasks.insert(task as QueryDeepPartialEntity<Task>);
    return task;
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

  /** The oldest due task, or one whose lease expired (its worker died), now running under `workerId`. */
  async claim(workerId: string, leaseMs: number): Promise<Task | undefined> {
    const [rows] = await this.dataSource.query<[Record<string, unknown>[], number]>(
      `UPDATE tasks SET status = 'running', lease_owner = $1,
              lease_expires_at = now() + make_interval(secs => $2::double precision / 1000),
              attempts = attempts + 1, started_at = COALESCE(started_at, now()), updated_at = now()
        WHERE id = (SELECT id FROM tasks
                     WHERE (status = 'queued' AND run_after <= now())
                        OR (status = 'running' AND lease_expires_at < now())
                     ORDER BY run_after
                     LIMIT 1
                     FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      [workerId, leaseMs],
    );
    if (!rows.length) return undefined;
    return (await this.tasks.findOneBy({ id: rows[0].id as string })) ?? undefined;
  }

  /** Extends the lease; false when the worker no longer owns the task (cancelled or taken over). */
  async renew(taskId: string, workerId: string, leaseMs: number): Promise<boolean> {
    const [rows] = await this.dataSource.query<[unknown[], number]>(
      `UPDATE tasks SET lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
        WHERE id = $1 AND lease_owner = $2 AND status = 'running' RETURNING id`,
      [taskId, workerId, leaseMs],
    );
    return rows.length > 0;
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
  finish(taskId: string, workerId: string, outcome: TaskOutcome, along: AlongWithChange): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      const [rows] = await manager.query<[unknown[], number]>(
        `UPDATE tasks SET status = $3, result = $4, error = $5, completed_at = now(), updated_at = now(),
                lease_owner = NULL, lease_expires_at = NULL, sealed_credential = NULL
          WHERE id = $1 AND lease_owner = $2 AND status = 'running' RETURNING id`,
        [
          taskId,
          workerId,
          outcome.status,
          outcome.status === 'succeeded' ? JSON.stringify(outcome.result ?? null) : null,
          outcome.status === 'failed' ? JSON.stringify(outcome.error) : null,
        ],
      );
      if (!rows.length) return false;
      await along(manager);
      return true;
    });
  }

  /** At shutdown: back to the queue at once, without counting the attempt. */
  async handBack(taskId: string, workerId: string): Promise<boolean> {
    const [rows] = await this.dataSource.query<[unknown[], number]>(
      `UPDATE tasks SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
              attempts = GREATEST(attempts - 1, 0), run_after = now(), updated_at = now()
        WHERE id = $1 AND lease_owner = $2 AND status = 'running' RETURNING id`,
      [taskId, workerId],
    );
    return rows.length > 0;
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
