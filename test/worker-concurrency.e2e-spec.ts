import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { FakeAgentServer, Gate, gate, sleep, waitFor } from './support/agent-server';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { CALLS_LOCAL_TARGETS } from './support/outbound-targets';
import { dropTestDatabase, startTestApp, TestApp } from './support/test-app';

/**
 * The worker with many runs in flight, as I/O-bound agents need: runs of one agent beyond its
 * `max_concurrency` wait, and the leases of all running tasks are renewed in one statement per heartbeat,
 * which also aborts the runs whose task was cancelled or whose lease was taken. A node:http server on
 * 127.0.0.1 stands in for the agents, counting the requests it holds open at once.
 *
 * One instance: 64 runs in flight, polling every 50 ms, private targets allowed, a 2 s lease (a
 * heartbeat every 500 ms).
 */

const FINAL = ['succeeded', 'failed', 'cancelled'];
const unique = (label: string): string => `${label}-${randomBytes(4).toString('hex')}`;

describe('task worker: runs in flight, per-agent caps, batched lease renewal', () => {
  let t: TestApp;
  let server: FakeAgentServer;
  let org: SignedUpOrganization;
  const gates: Gate[] = [];

  beforeAll(async () => {
    server = await FakeAgentServer.start();
    t = await startTestApp({
      env: {
        ...CALLS_LOCAL_TARGETS,
        WORKER_CONCURRENCY: '64',
        TASK_LEASE_MS: '2000',
        SHUTDOWN_GRACE_MS: '2000',
      },
    });
    org = await signUpOrganization(t.http, 'Concurrency');
  });
  afterAll(async () => {
    for (const g of gates) g.release();
    await server?.close();
    await t?.close();
  });

  const heldGate = (): Gate => {
    const g = gate();
    gates.push(g);
    return g;
  };

  /**
   * A path on the fake agent that answers after `hold` (a delay or a gate), counting the requests whose
   * connection is open (an aborted call closes it unanswered), and the most open at once.
   */
  const countingAgent = (hold: () => Promise<void>) => {
    const path = `/${unique('agent')}`;
    let open = 0;
    let peak = 0;
    server.on(path, async (request) => {
      open++;
      peak = Math.max(peak, open);
      void request.closed.then(() => open--);
      await hold();
      return { status: 200, json: { ok: true } };
    });
    return { path, peak: () => peak, open: () => open };
  };

  const createAgent = async (path: string, config: Record<string, unknown> = {}): Promise<string> => {
    const res = await t.http
      .post('/v1/agents')
      .set(org.auth)
      .send({ name: unique('remote'), type: 'http', config: { url: server.url(path), ...config } });
    if (res.status !== 201) throw new Error(`creating an agent answered ${res.status}: ${res.text}`);
    return res.body.id as string;
  };

  const queue = async (agentId: string, count: number): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const res = await t.http
        .post('/v1/tasks')
        .set(org.auth)
        .send({ instruction: `task ${i}`, agent_type: 'http', agent_id: agentId })
        .expect(202);
      ids.push(res.body.id);
    }
    return ids;
  };

  const statusOf = async (id: string): Promise<string> =>
    (await t.http.get(`/v1/tasks/${id}`).set(org.auth).expect(200)).body.status;

  const waitForEnd = async (ids: string[], timeoutMs = 60_000): Promise<string[]> => {
    const statuses = await waitFor(
      () => Promise.all(ids.map(statusOf)),
      (all) => all.every((status) => FINAL.includes(status)),
      { timeoutMs, intervalMs: 100 },
    );
    return statuses;
  };

  describe('max_concurrency', () => {
    it('never runs two tasks of an agent capped at 1 at once, and runs them all', async () => {
      const agent = countingAgent(() => sleep(150));
      const agentId = await createAgent(agent.path, { max_concurrency: 1 });
      const ids = await queue(agentId, 6);

      expect(await waitForEnd(ids)).toEqual(ids.map(() => 'succeeded'));
      expect(agent.peak()).toBe(1);
      expect(server.requestsTo(agent.path)).toHaveLength(6);
    });

    it('runs up to the cap of each agent at once, and an uncapped agent as many as are queued', async () => {
      const release = heldGate();
      const capped = countingAgent(() => release.promise);
      const uncapped = countingAgent(() => release.promise);
      const cappedId = await createAgent(capped.path, { max_concurrency: 3 });
      const uncappedId = await createAgent(uncapped.path);
      const cappedTasks = await queue(cappedId, 8);
      const uncappedTasks = await queue(uncappedId, 20);

      // Every uncapped task is at its agent at once (64 in flight), the capped agent has exactly 3.
      await waitFor(
        () => [capped.open(), uncapped.open()],
        ([c, u]) => c === 3 && u === 20,
        { timeoutMs: 60_000 },
      );
      await sleep(300);
      expect([capped.open(), uncapped.open()]).toEqual([3, 20]);

      release.release();
      expect(await waitForEnd([...cappedTasks, ...uncappedTasks])).toEqual(
        [...cappedTasks, ...uncappedTasks].map(() => 'succeeded'),
      );
      expect(capped.peak()).toBe(3);
      expect(server.requestsTo(capped.path)).toHaveLength(8);
    });

    it.each([
      [0, 'an integer between 1 and 1000'],
      [1001, 'an integer between 1 and 1000'],
      [2.5, 'an integer between 1 and 1000'],
      ['4', 'an integer between 1 and 1000'],
      [null, 'an integer between 1 and 1000'],
    ])('max_concurrency %p → 400 invalid_config, and nothing is created', async (value, message) => {
      const name = unique('bad-cap');
      const res = await t.http
        .post('/v1/agents')
        .set(org.auth)
        .send({ name, type: 'http', config: { url: server.url('/x'), max_concurrency: value } });
      expectProblem(res, 400, 'invalid_config');
      expect(JSON.stringify(res.body)).toContain(`config.max_concurrency must be ${message}`);
      const list = await t.http.get('/v1/agents?limit=100').set(org.auth).expect(200);
      expect(list.body.data.map((agent: { name: string }) => agent.name)).not.toContain(name);
    });

    it('an agent update with an invalid max_concurrency → 400, and the agent keeps its config', async () => {
      const agentId = await createAgent('/kept', { max_concurrency: 1000 });
      expectProblem(
        await t.http
          .patch(`/v1/agents/${agentId}`)
          .set(org.auth)
          .send({ config: { url: server.url('/kept'), max_concurrency: -1 } }),
        400,
        'invalid_config',
      );
      const agent = await t.http.get(`/v1/agents/${agentId}`).set(org.auth).expect(200);
      expect(agent.body.config).toEqual({ url: server.url('/kept'), max_concurrency: 1000 });
    });
  });

  describe('lease renewal of all running tasks in one statement', () => {
    it('aborts the cancelled task among many running, and only it', async () => {
      const release = heldGate();
      const agent = countingAgent(() => release.promise);
      const ids = await queue(await createAgent(agent.path), 12);
      await waitFor(
        () => agent.open(),
        (open) => open === 12,
        { timeoutMs: 60_000 },
      );
      const requests = server.requestsTo(agent.path);
      const victim = requests.find((request) => request.json.task_id === ids[5])!;

      await t.http.post(`/v1/tasks/${ids[5]}/cancel`).set(org.auth).expect(200);
      // Noticed at the next heartbeat (500 ms): the call to the agent is dropped unanswered.
      const outcome = await Promise.race([victim.closed, sleep(60_000).then(() => 'still open')]);
      expect(outcome).toEqual({ answered: false });
      // The others kept their leases through several heartbeats and are still at the agent.
      await sleep(2_500);
      expect(agent.open()).toBe(11);

      release.release();
      const statuses = await waitForEnd(ids);
      expect(statuses).toEqual(ids.map((id) => (id === ids[5] ? 'cancelled' : 'succeeded')));
    });

    it('aborts a run whose lease another worker took, and records nothing for it', async () => {
      const release = heldGate();
      const agent = countingAgent(() => release.promise);
      const ids = await queue(await createAgent(agent.path), 5);
      await waitFor(
        () => agent.open(),
        (open) => open === 5,
        { timeoutMs: 60_000 },
      );
      const taken = ids[2];
      const victim = server.requestsTo(agent.path).find((request) => request.json.task_id === taken)!;

      // As if this worker had stalled past its lease and another had claimed the task.
      const dataSource = t.app.get(DataSource);
      // The other worker holds a lease of its own, so the task stays its, however slow this test runs.
      await dataSource.query(
        `UPDATE tasks SET lease_owner = 'worker_elsewhere', lease_expires_at = now() + interval '1 hour' WHERE id = $1`,
        [taken],
      );

      const outcome = await Promise.race([victim.closed, sleep(60_000).then(() => 'still open')]);
      expect(outcome).toEqual({ answered: false });
      release.release();
      const others = ids.filter((id) => id !== taken);
      expect(await waitForEnd(others)).toEqual(others.map(() => 'succeeded'));

      // The task is the other worker's: still running under its lease, no outcome from this one.
      const [row] = await dataSource.query<{ status: string; lease_owner: string; result: unknown }[]>(
        'SELECT status, lease_owner, result FROM tasks WHERE id = $1',
        [taken],
      );
      expect(row).toEqual({ status: 'running', lease_owner: 'worker_elsewhere', result: null });
      const events = await t.http.get(`/v1/tasks/${taken}/events`).set(org.auth).expect(200);
      expect(events.body.data.map((event: { data: { status: string } }) => event.data.status)).toEqual([
        'queued',
        'running',
      ]);
      // Hand it to nobody: cancel it so the instance's shutdown has nothing left of it.
      await t.http.post(`/v1/tasks/${taken}/cancel`).set(org.auth).expect(200);
    });
  });

  it('a cancelled task waiting for its capped agent never reaches the agent', async () => {
    const release = heldGate();
    const agent = countingAgent(() => release.promise);
    const ids = await queue(await createAgent(agent.path, { max_concurrency: 1 }), 3);
    await waitFor(
      () => agent.open(),
      (open) => open === 1,
      { timeoutMs: 60_000 },
    );
    const first = server.requestsTo(agent.path)[0].json.task_id as string;
    const waitingIds = ids.filter((id) => id !== first);
    for (const id of waitingIds) await t.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
    await sleep(1_200); // two heartbeats
    release.release();
    const statuses = await waitFor(
      () => Promise.all(ids.map(statusOf)),
      (all: string[]) => all.every((status) => FINAL.includes(status)),
    );
    expect(statuses).toEqual(ids.map((id) => (id === first ? 'succeeded' : 'cancelled')));
    expect(server.requestsTo(agent.path)).toHaveLength(1);
  });
  it('at shutdown hands every task still running back to the queue, the attempt not counted', async () => {
    const release = heldGate();
    const agent = countingAgent(() => release.promise);
    const leaving = await startTestApp({
      env: {
        WORKER_CONCURRENCY: '64',
        WORKER_POLL_MS: '50',
        ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
        SHUTDOWN_GRACE_MS: '1000',
      },
    });
    let after: TestApp | undefined;
    try {
      const owner = await signUpOrganization(leaving.http, 'Leaving');
      const created = await leaving.http
        .post('/v1/agents')
        .set(owner.auth)
        .send({ name: 'held', type: 'http', config: { url: server.url(agent.path) } })
        .expect(201);
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await leaving.http
          .post('/v1/tasks')
          .set(owner.auth)
          .send({ instruction: `task ${i}`, agent_type: 'http', agent_id: created.body.id })
          .expect(202);
        ids.push(res.body.id);
      }
      await waitFor(
        () => agent.open(),
        (open) => open === 6,
        { timeoutMs: 60_000 },
      );

      // The runs outlast the grace period (half of SHUTDOWN_GRACE_MS): aborted, then handed back.
      await leaving.close({ keepData: true });
      expect(
        await waitFor(
          () => agent.open(),
          (open) => open === 0,
          { timeoutMs: 60_000 },
        ),
      ).toBe(0);
      after = await startTestApp({ databaseUrl: leaving.databaseUrl, dataDir: leaving.dataDir });
      const rows = await after.app
        .get(DataSource)
        .query<{ id: string; status: string; attempts: number; lease_owner: string | null }[]>(
          'SELECT id, status, attempts, lease_owner FROM tasks WHERE id = ANY($1) ORDER BY id',
          [ids],
        );
      expect(rows).toEqual(
        [...ids].sort().map((id) => ({ id, status: 'queued', attempts: 0, lease_owner: null })),
      );
      const events = await after.http.get(`/v1/tasks/${ids[0]}/events`).set(owner.auth).expect(200);
      expect(events.body.data.map((event: { data: { status: string } }) => event.data.status)).toEqual([
        'queued',
        'running',
        'queued',
      ]);
    } finally {
      release.release();
      await after?.close();
      if (leaving.databaseUrl) await dropTestDatabase(leaving.databaseUrl);
      rmSync(leaving.dataDir, { recursive: true, force: true });
    }
  });
});
