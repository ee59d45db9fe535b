import type { AgentRunContext } from '../../../src/agents/agent-runner';
import { AgentRunners } from '../../../src/agents/agent-runner';
import { TasksService } from '../../../src/tasks/tasks.service';
import { expectProblem, signUpOrganization, SignedUpOrganization } from '../../../test/support/factories';
import { createKey, pollUntil, type Auth } from '../../../test/support/keys';
import { userOfNewOrganization } from '../../../test/support/principals';
import { ServiceContext, startServiceContext, startTestApp, TestApp } from '../../../test/support/test-app';
import { reverseAgentExtension } from './reverse-agent.extension';
import { REVERSE_AGENT, ReverseRunner } from './reverse.runner';

const RUNS_TASKS = { WORKER_CONCURRENCY: '1', WORKER_POLL_MS: '50' };

/** The reverse agent type, loaded as one line of an extension list would load it. */
describe('example extension: an agent type with a built-in agent (reverse)', () => {
  describe('in the API', () => {
    let t: TestApp;
    let org: SignedUpOrganization;
    beforeAll(async () => {
      t = await startTestApp({ extensions: [reverseAgentExtension], env: RUNS_TASKS });
      org = await signUpOrganization(t.http, 'Reverse');
    });
    afterAll(() => t?.close());

    it('lists its built-in agent after echo, with an id of the shape of every agent id, and answers it by id', async () => {
      const listed = await t.http.get('/v1/agents').set(org.auth).expect(200);
      const reverse = {
        id: 'agent_builtinReverse00000000',
        name: 'Reverse',
        type: 'reverse',
        description: 'Answers with the instruction backwards.',
        built_in: true,
        // Priced by its runner, as a configured agent is (contract, "Costs").
        pricing: { credits_per_1k_input_tokens: 500, credits_per_1k_output_tokens: 1000 },
        default_max_credits: 50,
        created_at: null,
      };
      expect(REVERSE_AGENT.id).toBe(reverse.id);
      expect(listed.body.data).toEqual([
        expect.objectContaining({ id: 'agent_builtinEcho00000000000', type: 'echo', built_in: true }),
        reverse,
      ]);
      expect((await t.http.get(`/v1/agents/${reverse.id}`).set(org.auth).expect(200)).body).toEqual(reverse);
      // It has no row: it can be neither changed nor deleted.
      expectProblem(await t.http.delete(`/v1/agents/${reverse.id}`).set(org.auth), 404, 'not_found');
    });

    it('runs a task of its type to completion', async () => {
      const created = await t.http
        .post('/v1/tasks')
        .set(org.auth)
        .send({ instruction: 'gatehouse 🚪', agent_type: 'reverse' })
        .expect(202);
      const { value } = await pollUntil(
        () => t.http.get(`/v1/tasks/${created.body.id}`).set(org.auth),
        (res) => res.body.status === 'succeeded' || res.body.status === 'failed',
      );
      expect(value.body).toMatchObject({ status: 'succeeded', result: { output: '🚪 esuohetag' } });
    });

    const created = async (auth: Auth, body: Record<string, unknown>): Promise<string> =>
      (await t.http.post('/v1/tasks').set(auth).send(body).expect(202)).body.id;
    const ended = async (id: string): Promise<any> => {
      const { value } = await pollUntil(
        () => t.http.get(`/v1/tasks/${id}?wait=5`).set(org.auth),
        (res) => !['queued', 'running'].includes(res.body.status),
      );
      return value.body;
    };
    const eventsOf = async (id: string): Promise<{ type: string; data: any }[]> =>
      (await t.http.get(`/v1/tasks/${id}/events?limit=100`).set(org.auth).expect(200)).body.data.map(
        ({ type, data }: any) => ({ type, data }),
      );
    const balanceOf = async (id: string): Promise<number> =>
      (await t.http.get(`/v1/api-keys/${id}`).set(org.auth).expect(200)).body.credits.remaining;
    const status = (value: string) => ({ type: 'status', data: { status: value } });

    it("reports its run through the context's reporter: the events an agent posts, in order, before its end", async () => {
      const id = await created(org.auth, { instruction: 'abc', agent_type: 'reverse' });
      expect(await ended(id)).toMatchObject({
        status: 'succeeded',
        result: { output: 'cba' },
        progress: { message: 'reversing', percent: 0 },
        usage: { input_tokens: 3, output_tokens: 3 },
      });
      expect(await eventsOf(id)).toEqual([
        status('queued'),
        status('running'),
        { type: 'progress', data: { message: 'reversing', percent: 0 } },
        { type: 'output', data: { delta: 'cba' } },
        { type: 'usage', data: { input_tokens: 3, output_tokens: 3 } },
        status('succeeded'),
      ]);
    });

    // Named by its id, or by its type alone: leaving out agent_id must not make a priced agent free.
    it.each([
      ['named by agent_id', { agent_id: REVERSE_AGENT.id }, REVERSE_AGENT.id],
      ['named by its type alone', {}, null],
    ])(
      'charges the usage it reports at its built-in agent’s pricing, reserving its default_max_credits (%s)',
      async (_, naming, agentId) => {
        const key = await createKey(t.http, org.auth, {
          role: 'developer',
          credits: { remaining: 100, refill: null },
        });
        const id = await created(key.auth, { instruction: 'gatehouse 🚪', agent_type: 'reverse', ...naming });
        // 11 characters each way: ceil(11/1000 × 500 + 11/1000 × 1000) = ceil(16.5) = 17.
        expect(await ended(id)).toMatchObject({
          status: 'succeeded',
          agent_id: agentId,
          usage: { input_tokens: 11, output_tokens: 11, credits: 17 },
        });
        // The create request's own credit, and the run's 17 of the 50 reserved (the rest given back).
        const { value } = await pollUntil(
          () => balanceOf(key.id),
          (balance) => balance === 100 - 1 - 17,
        );
        expect(value).toBe(82);
      },
    );

    it('ends a run whose reported usage passes max_credits as failed, budget_exceeded', async () => {
      const key = await createKey(t.http, org.auth, {
        role: 'developer',
        credits: { remaining: 100, refill: null },
      });
      const id = await created(key.auth, {
        instruction: 'gatehouse 🚪',
        agent_type: 'reverse',
        agent_id: REVERSE_AGENT.id,
        max_credits: 5,
      });
      expect(await ended(id)).toMatchObject({
        status: 'failed',
        error: { code: 'budget_exceeded' },
        usage: { input_tokens: 11, output_tokens: 11, credits: 5 },
      });
      expect(
        (
          await pollUntil(
            () => balanceOf(key.id),
            (balance) => balance === 94,
          )
        ).value,
      ).toBe(94);
    });

    describe('a report once the attempt has ended', () => {
      let runner: ReverseRunner;
      beforeAll(() => (runner = t.app.get(ReverseRunner, { strict: false })));
      afterEach(() => jest.restoreAllMocks());

      it('is refused after the run returned, and stores nothing', async () => {
        const run = jest.spyOn(runner, 'run');
        const id = await created(org.auth, { instruction: 'late', agent_type: 'reverse' });
        expect((await ended(id)).status).toBe('succeeded');
        const [context] = run.mock.calls[0] as [AgentRunContext];
        const before = await eventsOf(id);
        await expect(context.report.progress({ message: 'too late' })).rejects.toMatchObject({
          code: 'task_token_expired',
        });
        await expect(context.report.usage({ input_tokens: 1, output_tokens: 1 })).rejects.toMatchObject({
          code: 'task_token_expired',
        });
        expect(await eventsOf(id)).toEqual(before);
      });

      it('is refused once the task is cancelled, whether or not the worker has noticed yet', async () => {
        let held!: AgentRunContext;
        const running = new Promise<void>((started) =>
          jest.spyOn(runner, 'run').mockImplementationOnce(async (context) => {
            held = context;
            started();
            await new Promise((aborted) => context.signal.addEventListener('abort', aborted));
            return {};
          }),
        );
        const id = await created(org.auth, { instruction: 'held', agent_type: 'reverse' });
        await running;
        expect((await held.report.progress({ percent: 50 })).seq).toBeGreaterThan(0);
        await t.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
        await expect(held.report.output('after cancel')).rejects.toMatchObject({
          code: 'task_token_expired',
        });
        expect((await eventsOf(id)).map((event) => event.type)).toEqual([
          'status',
          'status',
          'progress',
          'status',
        ]);
      });
    });

    it('checks the config of an agent of its type', async () => {
      const refused = await t.http
        .post('/v1/agents')
        .set(org.auth)
        .send({ name: 'Backwards', type: 'reverse', config: { url: 'https://example.test' } });
      expectProblem(refused, 400, 'invalid_config');
      await t.http.post('/v1/agents').set(org.auth).send({ name: 'Backwards', type: 'reverse' }).expect(201);
    });

    it('is in the OpenAPI document (so a generated client) beside the built-in types', async () => {
      const document = (await t.http.get('/openapi.json').expect(200)).body;
      expect(document.components.schemas.CreateTaskDto.properties.agent_type.enum).toEqual([
        'echo',
        'http',
        'llm',
        'reverse',
      ]);
    });
  });

  describe('in the worker process (WorkerModule, no HTTP)', () => {
    let worker: ServiceContext;
    beforeAll(async () => {
      worker = await startServiceContext({
        root: 'worker',
        extensions: [reverseAgentExtension],
        env: RUNS_TASKS,
      });
    });
    afterAll(() => worker?.close());

    it('has the runner from the same extension, and runs its tasks', async () => {
      expect(worker.get(AgentRunners, { strict: false }).types()).toEqual(['echo', 'http', 'llm', 'reverse']);
      const tasks = worker.get(TasksService, { strict: false });
      const principal = userOfNewOrganization('developer');
      const task = await tasks.create(
        principal,
        { instruction: 'worker', agent_type: 'reverse' },
        undefined,
        undefined,
      );
      const { value } = await pollUntil(
        () => tasks.get(principal, task.id),
        (current) => current.status === 'succeeded' || current.status === 'failed',
      );
      expect(value).toMatchObject({ status: 'succeeded', result: { output: 'rekrow' } });
    });
  });
});
