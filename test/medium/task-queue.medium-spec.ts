import { OrganizationsService } from '../../src/accounts/organizations.service';
import type { Principal } from '../../src/access/principal';
import { AgentRunners } from '../../src/agents/agent-runner';
import { newId } from '../../src/common/ids';
import { TASK_ID } from '../../src/tasks/tasks.declarations';
import { TaskQueueRepository } from '../../src/tasks/task-queue.repository';
import type { Task } from '../../src/tasks/task.entity';
import { TasksService } from '../../src/tasks/tasks.service';
import { AccountsModule } from '../../src/accounts/accounts.module';
import { TasksModule } from '../../src/tasks/tasks.module';
import { ServiceContext, startFeatureContext } from '../support/feature-context';

/** The queue's state changes on a real database, without HTTP or workers (WORKER_CONCURRENCY=0). */
describe('TaskQueueRepository', () => {
  let context: ServiceContext;
  let queue: TaskQueueRepository;
  let organizationId: string;
  const LEASE_MS = 30_000;

  beforeAll(async () => {
    context = await startFeatureContext({ imports: [TasksModule, AccountsModule] });
    queue = context.get(TaskQueueRepository);
    const { organization } = await context.get(OrganizationsService).createWithAdministrator({
      organizationName: 'Queue',
      email: 'queue-admin@example.test',
      password: 'a-long-enough-password',
      name: 'Admin',
    });
    organizationId = organization.id;
  });
  afterAll(() => context.close());

  function newTask(fields: Partial<Task> = {}): Task {
    return queue.newTask({
      id: newId(TASK_ID),
      organizationId,
      instruction: 'x',
      agentType: 'echo',
      agentId: null,
      attachments: [],
      status: 'queued',
      result: null,
      error: null,
      attempts: 0,
      maxAttempts: 3,
      leaseOwner: null,
      leaseExpiresAt: null,
      idempotencyKey: null,
      sealedCredential: null,
      createdBy: null,
      startedAt: null,
      completedAt: null,
      ...fields,
    });
  }

  async function enqueue(): Promise<Task> {
    const task = newTask();
    expect(await queue.insert(task)).toBe(true);
    return task;
  }

  const read = async (id: string): Promise<Task> => (await queue.findInOrganization(organizationId, id))!;
  const drain = async (): Promise<void> => {
    while (await queue.claim('drain', LEASE_MS)) {
      /* claim everything older so each test sees only its own tasks */
    }
  };

  beforeEach(drain);

  it('claims a queued task once, running under the claiming worker', async () => {
    const task = await enqueue();
    const [first, second] = await Promise.all([queue.claim('w1', LEASE_MS), queue.claim('w2', LEASE_MS)]);
    const claimed = [first, second].filter(Boolean);
    expect(claimed.map((t) => t!.id)).toEqual([task.id]);
    const row = await read(task.id);
    expect(row).toMatchObject({ status: 'running', attempts: 1 });
    expect(['w1', 'w2']).toContain(row.leaseOwner);
  });

  it('records an outcome only for the worker that owns the lease, and only once', async () => {
    const task = await enqueue();
    await queue.claim('owner', LEASE_MS);
    const along = jest.fn(async () => undefined);
    expect(await queue.finish(task.id, 'stranger', { status: 'succeeded', result: 1 }, along)).toBe(false);
    expect(await queue.renew(task.id, 'stranger', LEASE_MS)).toBe(false);
    expect(await queue.finish(task.id, 'owner', { status: 'succeeded', result: { ok: true } }, along)).toBe(
      true,
    );
    expect(await queue.finish(task.id, 'owner', { status: 'succeeded', result: 2 }, along)).toBe(false);
    expect(along).toHaveBeenCalledTimes(1);
    expect(await read(task.id)).toMatchObject({
      status: 'succeeded',
      result: { ok: true },
      leaseOwner: null,
    });
  });

  it('retries later, hands back without counting the attempt, and takes up an expired lease', async () => {
    const task = await enqueue();
    await queue.claim('w', LEASE_MS);
    const failure = { status: 'failed' as const, error: { code: 'boom', message: 'x' } };
    expect(await queue.retry(task.id, 'w', 60_000, failure)).toBe(true);
    expect(await read(task.id)).toMatchObject({ status: 'queued', attempts: 1, error: failure.error });
    expect(await queue.claim('w', LEASE_MS)).toBeUndefined(); // not due for a minute

    const other = await enqueue();
    await queue.claim('w', LEASE_MS);
    expect(await queue.handBack(other.id, 'w')).toBe(true);
    expect(await read(other.id)).toMatchObject({ status: 'queued', attempts: 0 });

    // A lease of 1 ms expires at once: another worker takes the task up, the first one lost it.
    expect((await queue.claim('dying', 1))?.id).toBe(other.id);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await queue.claim('rescuer', LEASE_MS))?.id).toBe(other.id);
    expect(await queue.renew(other.id, 'dying', LEASE_MS)).toBe(false);
  });

  it('cancels queued and running tasks, and refuses to cancel a finished one', async () => {
    const queued = await enqueue();
    const along = jest.fn(async () => undefined);
    expect(await queue.cancel(queued.id, along)).toBe(true);
    const running = await enqueue();
    await queue.claim('w', LEASE_MS);
    expect(await queue.cancel(running.id, along)).toBe(true);
    expect(await queue.renew(running.id, 'w', LEASE_MS)).toBe(false);
    expect(await queue.cancel(running.id, along)).toBe(false);
    expect(along).toHaveBeenCalledTimes(2);
    expect((await read(running.id)).status).toBe('cancelled');
  });

  it('renews the leases of many tasks in one statement, answering only those the worker still owns', async () => {
    const [kept, cancelled, takenOver, finished] = [
      await enqueue(),
      await enqueue(),
      await enqueue(),
      await enqueue(),
    ];
    expect(await queue.claimBatch('w', 1, 10)).toHaveLength(4);
    await queue.cancel(cancelled.id, async () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 20)); // the 1 ms leases have expired
    // Another worker takes up `kept` and `takenOver`; `w` takes up `finished` again and finishes it.
    expect((await queue.claimBatch('rescuer', LEASE_MS, 1))[0]?.id).toBe(kept.id);
    expect((await queue.claimBatch('rescuer', LEASE_MS, 1))[0]?.id).toBe(takenOver.id);
    await queue.claimBatch('w', LEASE_MS, 1);
    expect(
      await queue.finish(finished.id, 'w', { status: 'succeeded', result: 1 }, async () => undefined),
    ).toBe(true);
    const ids = [kept.id, cancelled.id, takenOver.id, finished.id];
    expect(await queue.renewMany(ids, 'w', LEASE_MS)).toEqual([]);
    expect((await queue.renewMany(ids, 'rescuer', LEASE_MS)).sort()).toEqual([kept.id, takenOver.id].sort());
    const row = await read(kept.id);
    expect(row.leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now() + LEASE_MS / 2);
    expect(await queue.renewMany([], 'rescuer', LEASE_MS)).toEqual([]);

    expect((await queue.handBackMany(ids, 'rescuer')).sort()).toEqual([kept.id, takenOver.id].sort());
    expect(await read(kept.id)).toMatchObject({ status: 'queued', leaseOwner: null });
    expect((await read(cancelled.id)).status).toBe('cancelled');
  });

  it('leaves the tasks of the agents it is told to out of a claim', async () => {
    expect(await queue.insert(newTask({ agentType: 'http', agentId: 'agent_capped' }))).toBe(true);
    const other = newTask({ agentType: 'http', agentId: 'agent_free' });
    await queue.insert(other);
    const noAgent = await enqueue();
    const claimed = await queue.claimBatch('w', LEASE_MS, 10, undefined, ['agent_capped']);
    expect(claimed.map((task) => task.id).sort()).toEqual([other.id, noAgent.id].sort());
    expect((await queue.claimBatch('w', LEASE_MS, 10, undefined, []))[0]?.agentId).toBe('agent_capped');
  });

  it('queues the tasks of one turn in one statement, each with its own fields and timestamps', async () => {
    const before = Date.now();
    const tasks = [
      newTask({ instruction: 'first', attachments: ['file_a', 'file_b'] }),
      newTask({ instruction: 'second', agentType: 'remote_http', createdBy: 'key_x' }),
      newTask({ instruction: 'third', sealedCredential: 'sealed' }),
    ];
    // Not awaited one by one: the three land in one batch.
    expect(await Promise.all(tasks.map((task) => queue.insert(task)))).toEqual([true, true, true]);
    for (const task of tasks) {
      expect(task.createdAt.getTime()).toBeGreaterThanOrEqual(before - 1_000);
      const stored = await read(task.id);
      expect(stored).toMatchObject({
        status: 'queued',
        attempts: 0,
        instruction: task.instruction,
        agentType: task.agentType,
        attachments: task.attachments,
        sealedCredential: task.sealedCredential,
        createdBy: task.createdBy,
      });
    }
  });

  it('queues one task per idempotency key, in one batch or across batches', async () => {
    const [first, twin] = [newTask({ idempotencyKey: 'once' }), newTask({ idempotencyKey: 'once' })];
    const other = newTask({ idempotencyKey: 'other' });
    expect(await Promise.all([first, twin, other].map((task) => queue.insert(task)))).toEqual([
      true,
      false,
      true,
    ]);
    expect(await queue.insert(newTask({ idempotencyKey: 'once' }))).toBe(false);
    expect((await queue.findByIdempotencyKey(organizationId, 'once'))!.id).toBe(first.id);
    expect(await queue.findInOrganization(organizationId, twin.id)).toBeNull();
  });

  it("keeps the caller's key (sealed) only with tasks of runners that may forward it", async () => {
    const runners = context.get(AgentRunners);
    if (!runners.get('forwarding_probe')) {
      runners.register({
        type: 'forwarding_probe',
        needsAgent: false,
        validateConfig: async () => undefined,
        run: async () => ({}),
      });
    }
    const service = context.get(TasksService);
    const principal: Principal = {
      kind: 'api_key',
      organizationId,
      userId: null,
      apiKeyId: 'key_probe',
      role: 'developer',
      permissions: new Set(),
    };
    const create = (agentType: string) =>
      service.create(principal, { instruction: 'x', agent_type: agentType }, undefined, 'sk_caller_value');

    const echo = await create('echo');
    expect((await read(echo.id)).sealedCredential).toBeNull();
    const forwarding = await create('forwarding_probe');
    const sealed = (await read(forwarding.id)).sealedCredential;
    expect(sealed).toEqual(expect.any(String));
    expect(sealed).not.toContain('sk_caller_value');
    expect(service.credentials.open(sealed!)).toBe('sk_caller_value');
  });
});
