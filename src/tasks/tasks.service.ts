import { HttpStatus, Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { AgentsService } from '../agents/agents.service';
import type { Principal } from '../auth/principal';
import { isIdOf, newId } from '../common/ids';
import { Page, paginate } from '../common/pagination';
import { badRequest, conflict, notFound, ProblemException } from '../common/problem';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { isUniqueViolation } from '../database/database-errors';
import { EventsService } from '../events/events.service';
import { SecretBox } from '../events/secret-box';
import { FilesService } from '../files/files.service';
import { CreateTaskDto, ListTasksQueryDto } from './dto/task.dto';
import { Task } from './task.entity';

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/;

@Injectable()
export class TasksService {
  readonly credentials: SecretBox;

  constructor(
    @InjectRepository(Task) private readonly tasks: Repository<Task>,
    private readonly dataSource: DataSource,
    private readonly agents: AgentsService,
    private readonly files: FilesService,
    private readonly events: EventsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.credentials = new SecretBox(config.API_KEY_HASH_SECRET, 'task-credentials');
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
      throw badRequest('invalid_idempotency_key', 'Idempotency-Key must be 1-200 visible ASCII characters.');
    }
    if (idempotencyKey) {
      const existing = await this.tasks.findOneBy({
        organizationId: principal.organizationId,
        idempotencyKey,
      });
      if (existing) return this.sameRequestOrConflict(existing, dto);
    }

    const runner = this.agents.runnerOrFail(dto.agent_type);
    let agentId: string | null = null;
    if (dto.agent_id) {
      const agent = await this.agents.get(principal, dto.agent_id).catch(() => undefined);
      if (!agent || agent.type !== dto.agent_type) {
        throw unprocessable(
          'agent_not_found',
          `No agent ${dto.agent_id} of type "${dto.agent_type}" exists.`,
          'agent_id',
        );
      }
      agentId = agent.id;
    } else if (runner.needsAgent) {
      throw unprocessable(
        'agent_required',
        `Tasks of type "${dto.agent_type}" need an agent_id.`,
        'agent_id',
      );
    }
    const attachments = [...new Set(dto.attachments ?? [])];
    const owned = await this.files.findOwned(principal.organizationId, attachments);
    if (owned.length !== attachments.length) {
      const missing = attachments.find((id) => !owned.some((file) => file.id === id));
      throw unprocessable(
        'attachment_not_found',
        `The attachment ${missing} is not a file of this organization.`,
        'attachments',
      );
    }

    const task = this.tasks.create({
      id: newId('task'),
      organizationId: principal.organizationId,
      instruction: dto.instruction,
      agentType: dto.agent_type,
      agentId,
      attachments,
      status: 'queued',
      result: null,
      error: null,
      attempts: 0,
      maxAttempts: this.config.TASK_MAX_ATTEMPTS,
      leaseOwner: null,
      leaseExpiresAt: null,
      idempotencyKey: idempotencyKey ?? null,
      sealedCredential: forwardKey ? this.credentials.seal(forwardKey) : null,
      createdBy: principal.apiKeyId ?? principal.userId,
      startedAt: null,
      completedAt: null,
    });
    try {
      return await this.tasks.save(task);
    } catch (error) {
      if (idempotencyKey && isUniqueViolation(error, 'tasks_idempotency_key')) {
        const first = await this.tasks.findOneByOrFail({
          organizationId: principal.organizationId,
          idempotencyKey,
        });
        return this.sameRequestOrConflict(first, dto);
      }
      throw error;
    }
  }

  list(principal: Principal, query: ListTasksQueryDto): Promise<Page<Task>> {
    const builder = this.tasks
      .createQueryBuilder('task')
      .where('task.organization_id = :organizationId', { organizationId: principal.organizationId });
    if (query.status) builder.andWhere('task.status = :status', { status: query.status });
    return paginate(builder, query);
  }

  async get(principal: Principal, id: string): Promise<Task> {
    const task = isIdOf('task', id)
      ? await this.tasks.findOneBy({ id, organizationId: principal.organizationId })
      : null;
    if (!task) throw notFound('The task');
    return task;
  }

  /** Queued or running tasks become cancelled at once; a running worker notices at its next heartbeat. */
  async cancel(principal: Principal, id: string): Promise<Task> {
    const task = await this.get(principal, id);
    const cancelled = await this.dataSource.transaction(async (manager) => {
      const rows = await manager.query<[Task[], number]>(
        `UPDATE tasks SET status = 'cancelled', completed_at = now(), updated_at = now(),
                lease_owner = NULL, lease_expires_at = NULL, sealed_credential = NULL
          WHERE id = $1 AND status IN ('queued', 'running')
          RETURNING id`,
        [task.id],
      );
      if (!rows[0].length) return false;
      await this.events.record(manager, [
        {
          organizationId: task.organizationId,
          type: 'task.cancelled',
          data: { task_id: task.id, agent_type: task.agentType },
        },
      ]);
      return true;
    });
    if (!cancelled) throw conflict('task_finished', `The task is already ${task.status}.`);
    return this.get(principal, id);
  }

  private sameRequestOrConflict(existing: Task, dto: CreateTaskDto): Task {
    const same =
      existing.instruction === dto.instruction &&
      existing.agentType === dto.agent_type &&
      (existing.agentId ?? undefined) === dto.agent_id &&
      JSON.stringify(existing.attachments) === JSON.stringify([...new Set(dto.attachments ?? [])]);
    if (!same) {
      throw conflict('idempotency_key_reused', 'This Idempotency-Key was used for a different request.');
    }
    return existing;
  }
}

function unprocessable(code: string, detail: string, field: string): ProblemException {
  return new ProblemException(HttpStatus.UNPROCESSABLE_ENTITY, code, detail, {
    errors: [{ field, message: detail }],
  });
}
