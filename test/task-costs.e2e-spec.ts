import { DataSource } from 'typeorm';
import { expectProblem, SignedUpOrganization } from './support/factories';
import {
  HeldRuns,
  startAppWithHeldRuns,
  startTwoInstancesWithHeldRuns,
  type HeldRun,
} from './support/held-runs';
import { describeWithPostgres } from './support/instances';
import { createKey, pollUntil, type CreatedKey } from './support/keys';
import type { TestApp } from './support/test-app';
import { UsageCounter } from '../src/usage/usage-counter';

/**
 * What agent runs cost (contract, "Costs"): an agent's pricing, a task's max_credits reserved from the
 * creating key's balance when it is created (refused, spending nothing, when the balance cannot cover
 * it), settled once when the run ends (its cost kept, the rest given back), and budget_exceeded for a
 * run that reports more usage than it reserved. Runs on whichever store the suite runs on: with Redis,
 * reservations come from Redis and their refunds follow the commit.
 */

const PRICING = { credits_per_1k_input_tokens: 1, credits_per_1k_output_tokens: 2 };

describe('task costs', () => {
  let t: TestApp;
  let runs: HeldRuns;
  let org: SignedUpOrganization;
  let pricedAgent: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({
      t,
      runs,
      org,
      agentId: pricedAgent,
      close,
    } = await startAppWithHeldRuns({ pricing: PRICING, default_max_credits: 10 }));
  });
  afterAll(() => close());

  const creditedKey = (remaining: number): Promise<CreatedKey> =>
    createKey(t.http, org.auth, { role: 'developer', credits: { remaining, refill: null } });

  const balanceOf = async (key: CreatedKey): Promise<number> =>
    (await t.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200)).body.credits.remaining;

  /** The balance once it reads `expected` (with Redis a settlement's refund follows the commit). */
  const settledBalance = async (key: CreatedKey, expected: number): Promise<number> =>
    (
      await pollUntil(
        () => balanceOf(key),
        (balance) => balance === expected,
        { timeoutMs: 5000 },
      )
    ).value;

  const report = (run: HeldRun, body: Record<string, unknown>) =>
    t.http.post(`/v1/tasks/${run.taskId}/events`).set(run.tokenAuth).send(body);

  async function waitUntilEnded(taskId: string): Promise<any> {
    const { value } = await pollUntil(
      () => t.http.get(`/v1/tasks/${taskId}`).set(org.auth),
      (res) => !['queued', 'running'].includes(res.body.status),
    );
    return value.body;
  }

  describe('agent pricing', () => {
    it('is set, shown and changed on an agent; the built-in echo agent is free', async () => {
      const agent = await t.http.get(`/v1/agents/${pricedAgent}`).set(org.auth).expect(200);
      expect(agent.body).toMatchObject({ pricing: PRICING, default_max_credits: 10 });
      const changed = await t.http
        .patch(`/v1/agents/${pricedAgent}`)
        .set(org.auth)
        .send({ pricing: { credits_per_1k_input_tokens: 0.5, credits_per_1k_output_tokens: 0 } })
        .expect(200);
      expect(changed.body.pricing).toEqual({
        credits_per_1k_input_tokens: 0.5,
        credits_per_1k_output_tokens: 0,
      });
      await t.http.patch(`/v1/agents/${pricedAgent}`).set(org.auth).send({ pricing: PRICING }).expect(200);
      const echo = (await t.http.get('/v1/agents').set(org.auth).expect(200)).body.data.find(
        (a: any) => a.built_in,
      );
      expect(echo).toMatchObject({
        pricing: { credits_per_1k_input_tokens: 0, credits_per_1k_output_tokens: 0 },
        default_max_credits: null,
      });
    });

    it.each([
      [
        { pricing: { credits_per_1k_input_tokens: -1, credits_per_1k_output_tokens: 0 } },
        'credits_per_1k_input_tokens',
      ],
      [{ pricing: { credits_per_1k_input_tokens: 1 } }, 'credits_per_1k_output_tokens'],
      [{ pricing: 'free' }, 'pricing'],
      [{ default_max_credits: -1 }, 'default_max_credits'],
      [{ default_max_credits: 1.5 }, 'default_max_credits'],
    ])('refuses %j with a 400 naming the field', async (body, field) => {
      const res = await t.http.patch(`/v1/agents/${pricedAgent}`).set(org.auth).send(body);
      expectProblem(res, 400, 'validation_failed');
      expect(JSON.stringify(res.body.errors)).toContain(field);
    });

    it('refuses a max_credits that is not an integer of at least 0', async () => {
      for (const max_credits of [-1, 1.5, '3', null]) {
        const res = await t.http
          .post('/v1/tasks')
          .set(org.auth)
          .send({ instruction: 'x', agent_type: 'echo', max_credits });
        expectProblem(res, 400, 'validation_failed');
      }
    });
  });

  it('reserves max_credits at creation, keeps what the usage cost and gives back the rest', async () => {
    const key = await creditedKey(100);
    const run = await runs.begin(t.http, key.auth, pricedAgent, { max_credits: 20 });
    // The create request's own credit and the 20 reserved are spent at once.
    expect(await balanceOf(key)).toBe(79);
    // 3,000 input tokens at 1 per 1k and 500 output at 2 per 1k: 3 + 1 = 4 credits.
    await report(run, { type: 'usage', data: { input_tokens: 1000, output_tokens: 200 } }).expect(202);
    await report(run, { type: 'usage', data: { input_tokens: 2000, output_tokens: 300 } }).expect(202);
    const running = await t.http.get(`/v1/tasks/${run.taskId}`).set(org.auth).expect(200);
    expect(running.body).toMatchObject({
      max_credits: 20,
      usage: { input_tokens: 3000, output_tokens: 500, credits: 4 },
    });
    run.release();
    const done = await waitUntilEnded(run.taskId);
    expect(done).toMatchObject({
      status: 'succeeded',
      usage: { input_tokens: 3000, output_tokens: 500, credits: 4 },
    });
    expect(await settledBalance(key, 95)).toBe(95);
  });

  it("reserves from the key's and its identity's balances alike and settles both", async () => {
    const identity = await t.http
      .post('/v1/identities')
      .set(org.auth)
      .send({ external_id: `cus_costs_${Date.now().toString(36)}`, credits: { remaining: 200 } })
      .expect(201);
    const key = await createKey(t.http, org.auth, {
      role: 'developer',
      credits: { remaining: 100 },
      identity_id: identity.body.id,
    });
    const identityBalance = async (): Promise<number> =>
      (await t.http.get(`/v1/identities/${identity.body.id}`).set(org.auth).expect(200)).body.credits
        .remaining;
    const run = await runs.begin(t.http, key.auth, pricedAgent, { max_credits: 20 });
    // Each balance pays the request's credit and holds the whole reservation.
    expect(await balanceOf(key)).toBe(79);
    expect(await identityBalance()).toBe(179);
    await report(run, { type: 'usage', data: { input_tokens: 3000, output_tokens: 500 } }).expect(202);
    run.release();
    expect(await waitUntilEnded(run.taskId)).toMatchObject({ status: 'succeeded', usage: { credits: 4 } });
    // Cost 4 kept by both; 16 given back to each, once.
    expect(await settledBalance(key, 95)).toBe(95);
    const { value } = await pollUntil(identityBalance, (balance) => balance === 195, { timeoutMs: 5000 });
    expect(value).toBe(195);
  });

  it("rounds a run's cost up to a whole credit", async () => {
    const key = await creditedKey(50);
    const run = await runs.begin(t.http, key.auth, pricedAgent, { max_credits: 5 });
    await report(run, { type: 'usage', data: { input_tokens: 1, output_tokens: 0 } }).expect(202);
    run.release();
    expect((await waitUntilEnded(run.taskId)).usage.credits).toBe(1);
    expect(await settledBalance(key, 48)).toBe(48);
  });

  it("takes the agent's default_max_credits when the task names none", async () => {
    const key = await creditedKey(100);
    const run = await runs.begin(t.http, key.auth, pricedAgent);
    expect(await balanceOf(key)).toBe(89);
    const task = await t.http.get(`/v1/tasks/${run.taskId}`).set(org.auth).expect(200);
    expect(task.body.max_credits).toBe(10);
    run.release();
    await waitUntilEnded(run.taskId);
    expect(await settledBalance(key, 99)).toBe(99);
  });

  it('refuses a task the balance cannot cover: 429 credits_exhausted, no task, nothing spent', async () => {
    const key = await creditedKey(10);
    const res = await t.http
      .post('/v1/tasks')
      .set(key.auth)
      .send({ instruction: 'expensive', agent_type: 'http', agent_id: pricedAgent, max_credits: 10 });
    // After the request's own credit 9 remain: fewer than 10.
    expectProblem(res, 429, 'credits_exhausted');
    expect(await balanceOf(key)).toBe(10);
    // Read with the administrator's token: a read with the key would spend one of its credits.
    const tasks = await t.http.get('/v1/tasks?limit=100').set(org.auth).expect(200);
    expect(tasks.body.data.filter((task: any) => task.instruction === 'expensive')).toEqual([]);
    // Exactly enough: 1 for the request and 9 reserved.
    const run = await runs.begin(t.http, key.auth, pricedAgent, { max_credits: 9 });
    expect(await balanceOf(key)).toBe(0);
    run.release();
    await waitUntilEnded(run.taskId);
    expect(await settledBalance(key, 9)).toBe(9);
  });

  it('ends a run whose usage passes max_credits as failed, budget_exceeded, charged max_credits', async () => {
    const key = await creditedKey(100);
    const run = await runs.begin(t.http, key.auth, pricedAgent, { max_credits: 2 });
    await report(run, { type: 'usage', data: { input_tokens: 2000, output_tokens: 0 } }).expect(202);
    // 3 credits > 2 reserved: the run ends at once.
    await report(run, { type: 'usage', data: { input_tokens: 1000, output_tokens: 0 } }).expect(202);
    const task = await t.http.get(`/v1/tasks/${run.taskId}`).set(org.auth).expect(200);
    expect(task.body).toMatchObject({
      status: 'failed',
      error: { code: 'budget_exceeded' },
      usage: { input_tokens: 3000, output_tokens: 0, credits: 2 },
    });
    expectProblem(await report(run, { type: 'progress', data: {} }), 401, 'task_token_expired');
    run.release();
    // The agent's late answer changes nothing: charged 2, nothing given back.
    await pollUntil(
      () => t.app.get(DataSource).query(`SELECT credits_refund_state FROM tasks WHERE id = $1`, [run.taskId]),
      (rows) => rows[0]?.credits_refund_state === 'done',
    );
    expect(await balanceOf(key)).toBe(97);
    expect((await t.http.get(`/v1/tasks/${run.taskId}`).set(org.auth).expect(200)).body.status).toBe(
      'failed',
    );
  });

  it('settles a cancelled run: its cost so far is kept', async () => {
    const key = await creditedKey(100);
    const run = await runs.begin(t.http, key.auth, pricedAgent, { max_credits: 10 });
    await report(run, { type: 'usage', data: { input_tokens: 1500, output_tokens: 0 } }).expect(202);
    await t.http.post(`/v1/tasks/${run.taskId}/cancel`).set(key.auth).expect(200);
    expect((await t.http.get(`/v1/tasks/${run.taskId}`).set(org.auth)).body.usage.credits).toBe(2);
    // Two requests (create, cancel) and 2 credits of usage.
    expect(await settledBalance(key, 96)).toBe(96);
    run.release();
  });

  it('settles exactly once when the run is taken up again after its worker lost the lease', async () => {
    const key = await creditedKey(100);
    const first = await runs.begin(t.http, key.auth, pricedAgent, { max_credits: 10 });
    await report(first, { type: 'usage', data: { input_tokens: 1000, output_tokens: 0 } }).expect(202);
    const next = runs.nextStart(first.taskId);
    await t.app
      .get(DataSource)
      .query(`UPDATE tasks SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [first.taskId]);
    await next;
    first.release();
    const done = await waitUntilEnded(first.taskId);
    expect(done).toMatchObject({ status: 'succeeded', usage: { credits: 1 } });
    expect(await settledBalance(key, 98)).toBe(98);
    // Nothing more is given back later.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await balanceOf(key)).toBe(98);
  });

  it('a key without credits (unlimited) reserves nothing; an access token neither', async () => {
    const unlimited = await createKey(t.http, org.auth, { role: 'developer' });
    const run = await runs.begin(t.http, unlimited.auth, pricedAgent, { max_credits: 1000 });
    await report(run, { type: 'usage', data: { input_tokens: 1000, output_tokens: 1000 } }).expect(202);
    run.release();
    expect((await waitUntilEnded(run.taskId)).usage.credits).toBe(3);
    const byUser = await runs.begin(t.http, org.auth, pricedAgent, { max_credits: 5 });
    byUser.release();
    expect((await waitUntilEnded(byUser.taskId)).status).toBe('succeeded');
  });

  it("counts the key's runs in its usage buckets: tasks, tokens and credits spent (requests and runs)", async () => {
    const key = await creditedKey(100);
    // Refused for want of credits: neither its request's credit nor a task shows in the usage.
    expectProblem(
      await t.http
        .post('/v1/tasks')
        .set(key.auth)
        .send({ instruction: 'too much', agent_type: 'http', agent_id: pricedAgent, max_credits: 500 }),
      429,
      'credits_exhausted',
    );
    const run = await runs.begin(t.http, key.auth, pricedAgent, { max_credits: 10 });
    await report(run, { type: 'usage', data: { input_tokens: 3000, output_tokens: 500 } }).expect(202);
    run.release();
    await waitUntilEnded(run.taskId);
    await settledBalance(key, 95);
    await t.app.get(UsageCounter).flush();

    const sum = (buckets: any[], field: string) => buckets.reduce((n, b) => n + b[field], 0);
    const buckets = (await t.http.get(`/v1/api-keys/${key.id}/usage`).set(org.auth).expect(200)).body.data;
    expect({
      tasks: sum(buckets, 'tasks'),
      input_tokens: sum(buckets, 'input_tokens'),
      output_tokens: sum(buckets, 'output_tokens'),
      // The accepted create request's credit and the run's 4.
      credits_spent: sum(buckets, 'credits_spent'),
      // Create twice, and the agent's report with the task token; the measures are not requests.
      requests: sum(buckets, 'requests'),
    }).toEqual({ tasks: 1, input_tokens: 3000, output_tokens: 500, credits_spent: 5, requests: 3 });
    const organization = await t.http.get('/v1/usage').set(org.auth).expect(200);
    expect(organization.body.data.find((row: any) => row.key_id === key.id)).toMatchObject({
      requests: 3,
      credits_spent: 5,
    });
  });

  it('counts a run under the identity its key belongs to when it ends, and a key without one under none', async () => {
    const identity = await t.http
      .post('/v1/identities')
      .set(org.auth)
      .send({ external_id: `cus_runs_${Date.now().toString(36)}` })
      .expect(201);
    const withIdentity = await createKey(t.http, org.auth, {
      role: 'developer',
      credits: { remaining: 100 },
      identity_id: identity.body.id,
    });
    const without = await creditedKey(100);
    const held = [
      await runs.begin(t.http, withIdentity.auth, pricedAgent, { max_credits: 10 }),
      await runs.begin(t.http, without.auth, pricedAgent, { max_credits: 10 }),
    ];
    for (const run of held) {
      await report(run, { type: 'usage', data: { input_tokens: 3000, output_tokens: 500 } }).expect(202);
      run.release();
    }
    for (const run of held) await waitUntilEnded(run.taskId);
    await t.app.get(UsageCounter).flush();

    const sum = (buckets: any[], field: string) => buckets.reduce((n, b) => n + b[field], 0);
    const ofIdentity = (
      await t.http.get(`/v1/identities/${identity.body.id}/usage`).set(org.auth).expect(200)
    ).body.data;
    // The identity's key's run only: its create request, the agent's report, and what the run used.
    expect({
      tasks: sum(ofIdentity, 'tasks'),
      input_tokens: sum(ofIdentity, 'input_tokens'),
      credits_spent: sum(ofIdentity, 'credits_spent'),
      requests: sum(ofIdentity, 'requests'),
    }).toEqual({ tasks: 1, input_tokens: 3000, credits_spent: 5, requests: 2 });
    const ofKey = (await t.http.get(`/v1/api-keys/${without.id}/usage`).set(org.auth).expect(200)).body.data;
    expect(sum(ofKey, 'tasks')).toBe(1);
  });

  it("task.succeeded and task.failed events carry the run's usage", async () => {
    const key = await creditedKey(100);
    const run = await runs.begin(t.http, key.auth, pricedAgent, { max_credits: 10 });
    await report(run, { type: 'usage', data: { input_tokens: 2000, output_tokens: 500 } }).expect(202);
    run.release();
    await waitUntilEnded(run.taskId);
    const [event] = await t.app
      .get(DataSource)
      .query(`SELECT data FROM events WHERE type = 'task.succeeded' AND data->>'task_id' = $1`, [run.taskId]);
    expect(event.data).toMatchObject({
      task_id: run.taskId,
      agent_type: 'http',
      usage: { input_tokens: 2000, output_tokens: 500, credits: 3 },
    });
  });
});

describeWithPostgres('task costs multi-instance e2e')(
  'task costs across instances (needs PostgreSQL)',
  () => {
    // Two API instances with their own workers on one database (and one Redis when the suite has it):
    // reservations never take more than the balance, and each run is settled once.
    let a: TestApp;
    let b: TestApp;
    let runs: HeldRuns;
    let org: SignedUpOrganization;
    let agentId: string;
    let close: () => Promise<void>;

    beforeAll(async () => {
      ({ a, b, runs, org, agentId, close } = await startTwoInstancesWithHeldRuns(
        { a: 8, b: 8 },
        { pricing: PRICING },
      ));
    });
    afterAll(() => close?.());

    it('reserves no more than the balance, whichever instance takes the request, and settles each run once', async () => {
      const key = await createKey(a.http, org.auth, {
        role: 'developer',
        credits: { remaining: 60, refill: null },
      });
      // Each create costs 1 + 10 reserved: 60 credits cover 5 of the 10 attempts.
      const attempts = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 ? b : a).http
            .post('/v1/tasks')
            .set(key.auth)
            .send({ instruction: `parallel ${i}`, agent_type: 'http', agent_id: agentId, max_credits: 10 }),
        ),
      );
      const accepted = attempts.filter((res) => res.status === 202);
      const refused = attempts.filter((res) => res.status === 429);
      expect(accepted).toHaveLength(5);
      expect(refused).toHaveLength(5);
      for (const res of refused) expect(res.body.code).toBe('credits_exhausted');
      const balance = async () =>
        (await a.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200)).body.credits.remaining;
      expect(await balance()).toBe(5);
      // The runs report nothing and end: every reservation comes back, once.
      // Released once the agent holds every run: a token minted is not yet a call received, and a call
      // arriving after releaseAll() would be held until the end of the file (a loaded CI run saw 45).
      const ids = accepted.map((res) => res.body.id as string);
      await Promise.all(ids.map((id) => runs.nextStart(id)));
      runs.releaseAll();
      const { value } = await pollUntil(balance, (remaining) => remaining === 55, { timeoutMs: 10_000 });
      expect(value).toBe(55);
    });
  },
);
