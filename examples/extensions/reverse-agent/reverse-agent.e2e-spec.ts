import { AgentRunners } from '../../../src/agents/agent-runner';
import { TasksService } from '../../../src/tasks/tasks.service';
import { expectProblem, signUpOrganization, SignedUpOrganization } from '../../../test/support/factories';
import { pollUntil } from '../../../test/support/keys';
import { userOfNewOrganization } from '../../../test/support/principals';
import { ServiceContext, startServiceContext, startTestApp, TestApp } from '../../../test/support/test-app';
import { reverseAgentExtension } from './reverse-agent.extension';
import { REVERSE_AGENT } from './reverse.runner';

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
        // Built-in agents are free (contract, "Costs").
        pricing: { credits_per_1k_input_tokens: 0, credits_per_1k_output_tokens: 0 },
        default_max_credits: null,
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
      expect(worker.get(AgentRunners, { strict: false }).types()).toEqual(['echo', 'http', 'reverse']);
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
