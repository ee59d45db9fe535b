import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createKey } from './support/keys';
import { listAll, signUpOrganization, type SignedUpOrganization } from './support/factories';
import { LlmUpstream } from './support/llm-upstreams';
import { CALLS_LOCAL_TARGETS } from './support/outbound-targets';
import { startTestApp, type TestApp } from './support/test-app';

/**
 * Issue 45's "a model agent is usable from MCP's run_<agent> tool": an `llm` agent is listed by
 * tools/list like any other agent, and calling its run tool with the official SDK's client runs the model
 * (a local server speaking Chat Completions, test/support/llm-upstreams.ts) and answers the task, whose
 * result is `{output, model, finish_reason, usage}` (CONTRACT, "Model agents and provider secrets" and
 * "AI assistants").
 */
describe('llm agents over MCP', () => {
  let t: TestApp;
  let openai: LlmUpstream;
  let org: SignedUpOrganization;
  let client: Client;
  let agentId: string;
  const secretValue = `sk-mcp-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    openai = await LlmUpstream.start('openai');
    t = await startTestApp({ env: { ...CALLS_LOCAL_TARGETS, WORKER_CONCURRENCY: '2' } });
    org = await signUpOrganization(t.http, 'Models over MCP');
    const secret = await t.http
      .post('/v1/secrets')
      .set(org.auth)
      .send({ name: 'openai', value: secretValue })
      .expect(201);
    const agent = await t.http
      .post('/v1/agents')
      .set(org.auth)
      .send({
        name: 'Model Writer',
        description: 'Writes with a model',
        type: 'llm',
        config: {
          provider: 'openai',
          model: 'gpt-test',
          secret_id: secret.body.id,
          base_url: openai.baseUrl,
        },
        pricing: { credits_per_1k_input_tokens: 1, credits_per_1k_output_tokens: 2 },
        default_max_credits: 50,
      })
      .expect(201);
    agentId = agent.body.id;

    const server = t.app.getHttpServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const key = await createKey(t.http, org.auth, { name: 'assistant' });
    client = new Client({ name: 'llm-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${key.key}` } },
      }),
    );
  });
  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await openai?.close();
    await t?.close();
  });

  it('lists the agent as run_model_writer, with its name, description and id', async () => {
    const { tools } = await client.listTools();
    const tool = tools.find((candidate) => candidate.name === 'run_model_writer');
    expect(tool).toMatchObject({ title: 'Model Writer', description: 'Writes with a model' });
    expect(tool!._meta).toEqual({ 'gatehouse/agent_id': agentId });
  });

  it('runs the model through the upstream and answers the task with its result', async () => {
    openai.answer({
      kind: 'stream',
      deltas: ['Over', ' MCP', ', hello'],
      inputTokens: 400,
      outputTokens: 100,
    });
    const before = openai.requests.length;
    const progress: unknown[] = [];
    const result = await client.callTool(
      { name: 'run_model_writer', arguments: { instruction: 'Say hello', wait_seconds: 60 } },
      undefined,
      { onprogress: (notification) => progress.push(notification), timeout: 90_000 },
    );

    expect(result.isError).toBeFalsy();
    const task = result.structuredContent as Record<string, any>;
    const expected = {
      output: 'Over MCP, hello',
      model: 'gpt-test-served',
      finish_reason: 'stop',
      usage: { input_tokens: 400, output_tokens: 100 },
    };
    expect(task).toMatchObject({
      status: 'succeeded',
      agent_type: 'llm',
      agent_id: agentId,
      instruction: 'Say hello',
      result: expected,
    });
    expect(JSON.parse((result.content as { text: string }[])[0].text)).toEqual(expected);
    // The task is the REST one, with the provider's token counts as its usage.
    const rest = await t.http.get(`/v1/tasks/${task.id}`).set(org.auth).expect(200);
    expect(rest.body).toEqual(task);
    expect(rest.body.usage).toEqual(expect.objectContaining({ input_tokens: 400, output_tokens: 100 }));

    // The run went upstream once, with the secret and the instruction as the user's message.
    const sent = openai.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0].headers.authorization).toBe(`Bearer ${secretValue}`);
    expect(JSON.stringify(sent[0].body.messages)).toContain('Say hello');

    // Output streams as output events, not as progress: the model's text is in the task's events, and
    // a run without progress events sends no notifications/progress.
    const events = await listAll(t.http, `/v1/tasks/${task.id}/events`, org.auth);
    const deltas = events.filter((event) => event.type === 'output').map((event) => event.data.delta);
    expect(deltas.join('')).toBe('Over MCP, hello');
    expect(progress).toEqual([]);
  });

  it('answers isError with the task when the upstream refuses, without the secret', async () => {
    openai.answer({ kind: 'error', status: 401, message: 'Incorrect API key provided' });
    const result = await client.callTool(
      { name: 'run_model_writer', arguments: { instruction: 'Fail please', wait_seconds: 60 } },
      undefined,
      { timeout: 90_000 },
    );
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      status: 'failed',
      error: { code: 'upstream_error' },
    });
    expect(JSON.stringify(result)).not.toContain(secretValue);
  });
});
