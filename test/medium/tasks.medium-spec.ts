import { DataSource } from 'typeorm';
import type { Principal } from '../../src/access/principal';
import { AgentsService } from '../../src/agents/agents.service';
import { FilesService } from '../../src/files/files.service';
import type { CreateTaskDto } from '../../src/tasks/dto/task.dto';
import { TaskQueueRepository } from '../../src/tasks/task-queue.repository';
import type { Task } from '../../src/tasks/task.entity';
import { TasksModule } from '../../src/tasks/tasks.module';
import { TaskEnds } from '../../src/tasks/task-ends';
import { TasksService } from '../../src/tasks/tasks.service';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { PUBLIC_URL } from '../support/outbound-targets';
import { userOfNewOrganization } from '../support/principals';
import { storeFile } from '../support/stored-files';

const MAX_ATTEMPTS = 4;

/**
 * TasksService and TaskEnds (cancel) on a real database, without workers (WORKER_CONCURRENCY=0: queued tasks stay queued):
 * what a task request may name, Idempotency-Key, cancellation and organization scoping. The queue's
 * own state changes are test/medium/task-queue.medium-spec.ts's.
 */
describe('tasks (service level)', () => {
  let context: ServiceContext;
  let tasks: TasksService;
  let ends: TaskEnds;
  let queue: TaskQueueRepository;

  beforeAll(async () => {
    context = await startFeatureContext({
      imports: [TasksModule],
      env: { TASK_MAX_ATTEMPTS: String(MAX_ATTEMPTS) },
    });
    tasks = context.get(TasksService);
    ends = context.get(TaskEnds);
    queue = context.get(TaskQueueRepository);
  });
  afterAll(() => context?.close());

  const create = (principal: Principal, dto: CreateTaskDto, idempotencyKey?: string): Promise<Task> =>
    tasks.create(principal, dto, idempotencyKey, undefined);
  const taskIds = async (principal: Principal, status?: Task['status']): Promise<string[]> =>
    (await tasks.list(principal, { status, limit: 100 })).data.map((task) => task.id);
  const eventsOf = (organizationId: string): Promise<{ type: string; data: unknown }[]> =>
    context
      .get(DataSource)
      .query(`SELECT type, data FROM events WHERE organization_id = $1 ORDER BY created_at`, [
        organizationId,
      ]);

  /**
   * Runs the task to `succeeded` as a worker would: claimed, then finished. Claims take the oldest due
   * task first; older tasks of other tests claimed on the way are handed back to the queue as they were.
   */
  async function succeed(task: Task): Promise<void> {
    const WORKER = 'medium-spec';
    const onTheWay: string[] = [];
    let claimed: Task | undefined;
    while ((claimed = await queue.claim(WORKER, 60_000)) && claimed.id !== task.id) onTheWay.push(claimed.id);
    expect(claimed?.id).toBe(task.id);
    await queue.finish(task.id, WORKER, { status: 'succeeded', result: { ok: true } }, async () => {});
    for (const id of onTheWay) await queue.handBack(id, WORKER);
  }

  it('queues a task with its attachments once each, the configured attempts and its creator', async () => {
    const a = userOfNewOrganization('developer');
    const file = await storeFile(context, a, 'report');
    const task = await create(a, {
      instruction: 'summarise',
      agent_type: 'echo',
      attachments: [file.id, file.id],
    });
    expect(await tasks.get(a, task.id)).toMatchObject({
      status: 'queued',
      instruction: 'summarise',
      agentType: 'echo',
      agentId: null,
      attachments: [file.id],
      attempts: 0,
      maxAttempts: MAX_ATTEMPTS,
      createdBy: a.userId,
      result: null,
      error: null,
    });
    const byKey = { ...userOfNewOrganization(), kind: 'api_key' as const, apiKeyId: 'key_x', userId: null };
    expect((await create(byKey, { instruction: 'x', agent_type: 'echo' })).createdBy).toBe('key_x');
  });

  describe('refuses a task naming what does not exist (and queues nothing)', () => {
    const expectRefused = async (principal: Principal, dto: CreateTaskDto, code: string, field: string) => {
      await expect(create(principal, dto)).rejects.toMatchObject({
        code,
        errors: [expect.objectContaining({ field })],
      });
      expect(await taskIds(principal)).toEqual([]);
    };

    it('an unknown agent_type (unknown_agent_type)', async () => {
      await expectRefused(
        userOfNewOrganization(),
        { instruction: 'x', agent_type: 'telepathy' },
        'unknown_agent_type',
        'agent_type',
      );
    });

    it('an http task without agent_id (agent_required)', async () => {
      await expectRefused(
        userOfNewOrganization(),
        { instruction: 'x', agent_type: 'http' },
        'agent_required',
        'agent_id',
      );
    });

    it('an agent of another type, of another organization, or deleted (agent_not_found)', async () => {
      const a = userOfNewOrganization();
      const b = userOfNewOrganization();
      const agents = context.get(AgentsService);
      const echoAgent = await agents.create(a, { name: 'echo', type: 'echo' });
      const remote = await agents.create(a, { name: 'remote', type: 'http', config: { url: PUBLIC_URL } });
      const deleted = await agents.create(a, { name: 'gone', type: 'http', config: { url: PUBLIC_URL } });
      await agents.delete(a, deleted.id);

      for (const [principal, named] of [
        [a, { agent_type: 'http', agent_id: echoAgent.id }], // of another type
        [a, { agent_type: 'http', agent_id: deleted.id }],
        [b, { agent_type: 'http', agent_id: remote.id }], // of another organization
        [b, { agent_type: 'echo', agent_id: echoAgent.id }],
      ] as const) {
        await expectRefused(principal, { instruction: 'x', ...named }, 'agent_not_found', 'agent_id');
      }
      // The organization's own agent of the right type is taken.
      expect((await create(a, { instruction: 'x', agent_type: 'http', agent_id: remote.id })).agentId).toBe(
        remote.id,
      );
    });

    it('an attachment of another organization, unknown, malformed or deleted (attachment_not_found)', async () => {
      const a = userOfNewOrganization();
      const b = userOfNewOrganization();
      const mine = await storeFile(context, a, 'mine');
      const theirs = await storeFile(context, b, 'theirs', { originalname: 'theirs.txt' });
      const deleted = await storeFile(context, a, 'gone');
      await context.get(FilesService).delete(a, deleted.id);

      for (const missing of [theirs.id, 'file_0000000000000000000000', 'not-a-file', deleted.id]) {
        const error = await create(a, {
          instruction: 'x',
          agent_type: 'echo',
          attachments: [mine.id, missing],
        }).then(
          () => undefined,
          (refusal: { code: string; detail: string; errors: unknown[] }) => refusal,
        );
        expect(error).toMatchObject({
          code: 'attachment_not_found',
          detail: expect.stringContaining(missing),
          errors: [expect.objectContaining({ field: 'attachments' })],
        });
        // It names the id the caller sent, nothing of the other organization's file.
        expect(JSON.stringify([error!.detail, error!.errors])).not.toContain('theirs.txt');
      }
      expect(await taskIds(a)).toEqual([]);
    });
  });

  describe('Idempotency-Key', () => {
    const body = { instruction: 'once', agent_type: 'echo' };

    it('returns the first task to a retry of the same request, before and after it finished', async () => {
      const a = userOfNewOrganization();
      const first = await create(a, body, 'retry-1');
      expect((await create(a, { ...body }, 'retry-1')).id).toBe(first.id);
      await succeed(first);
      const after = await create(a, body, 'retry-1');
      expect(after).toMatchObject({ id: first.id, status: 'succeeded' });
      expect(await taskIds(a)).toEqual([first.id]);
    });

    it('queues one task for concurrent requests under one key', async () => {
      const a = userOfNewOrganization();
      const answers = await Promise.all([1, 2, 3].map(() => create(a, body, 'raced')));
      expect(new Set(answers.map((task) => task.id)).size).toBe(1);
      expect(await taskIds(a)).toEqual([answers[0].id]);
    });

    it('refuses a different request under a used key (idempotency_key_reused), and queues nothing', async () => {
      const a = userOfNewOrganization();
      const file = await storeFile(context, a, 'x');
      const first = await create(a, { ...body, attachments: [file.id] }, 'used');
      for (const other of [
        { ...body, instruction: 'something else' },
        { ...body, agent_type: 'http' },
        { ...body, attachments: [] },
      ]) {
        await expect(create(a, other, 'used')).rejects.toMatchObject({ code: 'idempotency_key_reused' });
      }
      // The same attachments named twice are the same request.
      expect((await create(a, { ...body, attachments: [file.id, file.id] }, 'used')).id).toBe(first.id);
      expect(await taskIds(a)).toEqual([first.id]);
    });

    it("keeps keys per organization: another organization's same key queues its own task", async () => {
      const a = userOfNewOrganization();
      const b = userOfNewOrganization();
      const mine = await create(a, body, 'shared');
      const theirs = await create(b, body, 'shared');
      expect(theirs.id).not.toBe(mine.id);
      expect(await taskIds(b)).toEqual([theirs.id]);
    });

    it.each([
      ['empty', ''],
      ['of 201 characters', 'x'.repeat(201)],
      ['with a space', 'with space'],
      ['with a non-ASCII character', 'naïve'],
    ])('refuses a key %s (invalid_idempotency_key)', async (_label, key) => {
      const a = userOfNewOrganization();
      await expect(create(a, body, key)).rejects.toMatchObject({ code: 'invalid_idempotency_key' });
      expect(await taskIds(a)).toEqual([]);
    });
  });

  describe('cancellation', () => {
    it('cancels a queued task, records task.cancelled with it, and refuses a second cancel (task_finished)', async () => {
      const a = userOfNewOrganization();
      const task = await create(a, { instruction: 'wait', agent_type: 'echo' });
      const cancelled = await ends.cancel(a, task.id);
      expect(cancelled).toMatchObject({
        id: task.id,
        status: 'cancelled',
        completedAt: expect.any(Date),
        result: null,
      });
      expect(await taskIds(a, 'cancelled')).toEqual([task.id]);
      expect(await taskIds(a, 'queued')).toEqual([]);
      expect(await eventsOf(a.organizationId)).toEqual([
        { type: 'task.cancelled', data: { task_id: task.id, agent_type: 'echo' } },
      ]);

      await expect(ends.cancel(a, task.id)).rejects.toMatchObject({ code: 'task_finished' });
      expect(await eventsOf(a.organizationId)).toHaveLength(1);
    });

    it('refuses to cancel a finished task (task_finished), which stays as it was', async () => {
      const a = userOfNewOrganization();
      const task = await create(a, { instruction: 'done', agent_type: 'echo' });
      await succeed(task);
      const before = await tasks.get(a, task.id);
      await expect(ends.cancel(a, task.id)).rejects.toMatchObject({ code: 'task_finished' });
      expect(await tasks.get(a, task.id)).toEqual(before);
      expect(before).toMatchObject({ status: 'succeeded', result: { ok: true } });
      expect(await eventsOf(a.organizationId)).toEqual([]);
    });
  });

  it("hides an organization's tasks, queued or finished, from every other organization", async () => {
    const a = userOfNewOrganization();
    const b = userOfNewOrganization();
    const queued = await create(a, { instruction: 'mine', agent_type: 'echo' });
    const finished = await create(a, { instruction: 'mine too', agent_type: 'echo' });
    await succeed(finished);

    for (const task of [queued, finished]) {
      await expect(tasks.get(b, task.id)).rejects.toMatchObject({ code: 'not_found' });
      await expect(ends.cancel(b, task.id)).rejects.toMatchObject({ code: 'not_found' });
    }
    expect(await taskIds(b)).toEqual([]);
    expect(await taskIds(b, 'queued')).toEqual([]);
    expect(await taskIds(b, 'succeeded')).toEqual([]);

    // B's cancel changed nothing.
    expect((await tasks.get(a, queued.id)).status).toBe('queued');
    expect(await taskIds(a, 'queued')).toEqual([queued.id]);
    expect(await taskIds(a, 'succeeded')).toEqual([finished.id]);
    expect(await eventsOf(a.organizationId)).toEqual([]);
  });

  it('answers not_found for an id that is not a task id or no task', async () => {
    const a = userOfNewOrganization();
    for (const id of ['task_0000000000000000000000', 'nope', 'file_0000000000000000000000']) {
      await expect(tasks.get(a, id)).rejects.toMatchObject({ code: 'not_found' });
      await expect(ends.cancel(a, id)).rejects.toMatchObject({ code: 'not_found' });
    }
  });
});
