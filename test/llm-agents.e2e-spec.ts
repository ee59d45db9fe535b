import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { waitFor } from './support/agent-server';
import { expectProblem, listAll, signUpOrganization, SignedUpOrganization } from './support/factories';
import { LlmUpstream } from './support/llm-upstreams';
import { CALLS_LOCAL_TARGETS } from './support/outbound-targets';
import { startTestApp, TestApp } from './support/test-app';

type Auth = Record<string, string>;
const FINAL = ['succeeded', 'failed', 'cancelled'];

/**
 * `llm` agents (CONTRACT, "Model agents and provider secrets") over HTTP, against local servers that
 * speak each provider's streaming wire format (test/support/llm-upstreams.ts): what goes upstream (the
 * secret in the provider's header, never the caller's key nor a task token; system, instruction and
 * text attachments; the budget's output cap), what comes back (output events, usage, the result, costs),
 * and failures (cancel aborting the upstream, 429 and 5xx retried, another 4xx final without the secret,
 * configs refused). Workers run in the instance, at the default lease: a cancellation reaches the run
 * through the task's change, not its heartbeat.
 */
describe('llm agents', () => {
  let t: TestApp;
  let openai: LlmUpstream;
  let anthropic: LlmUpstream;
  let org: SignedUpOrganization;
  let other: SignedUpOrganization;
  /** The caller's API key: it must never reach an upstream. */
  let callerKey: string;
  let caller: Auth;
  const secretValue = `sk-upstream-${randomBytes(12).toString('hex')}`;
  let secretId: string;

  beforeAll(async () => {
    openai = await LlmUpstream.start('openai');
    anthropic = await LlmUpstream.start('anthropic');
    t = await startTestApp({
      env: { ...CALLS_LOCAL_TARGETS, WORKER_CONCURRENCY: '4', TASK_MAX_ATTEMPTS: '3' },
    });
    org = await signUpOrganization(t.http, 'Models');
    other = await signUpOrganization(t.http, 'Others');
    const key = await t.http
      .post('/v1/api-keys')
      .set(org.auth)
      .send({ name: 'caller', role: 'developer' })
      .expect(201);
    callerKey = key.body.key;
    caller = { 'X-API-Key': callerKey };
    secretId = (
      await t.http
        .post('/v1/secrets')
        .set(org.auth)
        .send({ name: 'provider', value: secretValue })
        .expect(201)
    ).body.id;
  });
  afterAll(async () => {
    await openai?.close();
    await anthropic?.close();
    await t?.close();
  });

  const createAgent = async (
    config: Record<string, unknown>,
    extra: Record<string, unknown> = {},
  ): Promise<any> => {
    const res = await t.http
      .post('/v1/agents')
      .set(org.auth)
      .send({ name: `llm-${randomBytes(3).toString('hex')}`, type: 'llm', config, ...extra });
    if (res.status !== 201) throw new Error(`creating an agent answered ${res.status}: ${res.text}`);
    return res.body;
  };
  const openaiAgent = (config: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
    createAgent(
      { provider: 'openai', model: 'gpt-test', secret_id: secretId, base_url: openai.baseUrl, ...config },
      extra,
    );
  const anthropicAgent = (config: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
    createAgent(
      {
        provider: 'anthropic',
        model: 'claude-test',
        secret_id: secretId,
        base_url: anthropic.baseUrl,
        ...config,
      },
      extra,
    );
  const runTask = async (body: Record<string, unknown>): Promise<any> => {
    const res = await t.http
      .post('/v1/tasks')
      .set(caller)
      .send({ agent_type: 'llm', ...body });
    if (res.status !== 202) throw new Error(`creating a task answered ${res.status}: ${res.text}`);
    return res.body;
  };
  const waitForTask = async (id: string, statuses = FINAL): Promise<any> => {
    const res = await waitFor<Response>(
      () => t.http.get(`/v1/tasks/${id}`).set(org.auth),
      (r) => r.status !== 200 || statuses.includes(r.body.status),
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    expect(res.status).toBe(200);
    return res.body;
  };
  const eventsOf = (id: string): Promise<any[]> => listAll(t.http, `/v1/tasks/${id}/events`, org.auth);
  const upload = async (bytes: Buffer, filename: string, contentType: string): Promise<string> =>
    (
      await t.http
        .post('/v1/files')
        .set(org.auth)
        .attach('file', bytes, { filename, contentType })
        .expect(201)
    ).body.id;

  /** Every header and body an upstream received, as one string, to look for what must not be there. */
  const everythingSent = (upstream: LlmUpstream): string =>
    JSON.stringify(upstream.requests.map(({ headers, body }) => ({ headers, body })));

  const expectNoCallerCredentials = (upstream: LlmUpstream): void => {
    const sent = everythingSent(upstream);
    expect(sent).not.toContain(callerKey);
    expect(sent).not.toContain(org.token);
    expect(sent).not.toContain('gtt_');
    for (const request of upstream.requests) {
      expect(request.headers['x-gatehouse-task-token']).toBeUndefined();
    }
  };

  describe('a run', () => {
    it('on Chat Completions: the secret as a bearer token, text attachments, streamed output, usage and costs', async () => {
      openai.answer({
        kind: 'stream',
        deltas: ['Hel', 'lo', ', wor', 'ld'],
        inputTokens: 1200,
        cachedTokens: 200,
        outputTokens: 500,
      });
      const agent = await openaiAgent(
        { system: 'You are terse.', temperature: 0.5 },
        { pricing: { credits_per_1k_input_tokens: 1, credits_per_1k_output_tokens: 2 } },
      );
      const notes = await upload(Buffer.from('first notes'), 'notes.txt', 'text/plain');
      const data = await upload(Buffer.from('{"a":1}'), 'data.json', 'application/json');
      const image = await upload(Buffer.from([0x89, 0x50, 0x4e, 0x47]), 'pic.png', 'image/png');
      const ld = await upload(Buffer.from('{"@id":"x"}'), 'doc.jsonld', 'application/ld+json');
      const before = openai.requests.length;
      const task = await runTask({
        agent_id: agent.id,
        instruction: 'Summarize',
        attachments: [notes, image, data, ld],
        max_credits: 100,
      });
      const done = await waitForTask(task.id);
      expect(done.status).toBe('succeeded');
      expect(done.result).toEqual({
        output: 'Hello, world',
        model: 'gpt-test-served',
        finish_reason: 'stop',
        usage: { input_tokens: 1200, output_tokens: 500 },
      });
      expect(done.usage).toEqual(
        expect.objectContaining({ input_tokens: 1200, output_tokens: 500, credits: 3 }),
      );

      const events = await eventsOf(task.id);
      const outputs = events.filter((e) => e.type === 'output').map((e) => e.data.delta);
      expect(outputs.join('')).toBe('Hello, world');
      expect(events.filter((e) => e.type === 'usage').map((e) => e.data)).toEqual([
        expect.objectContaining({ input_tokens: 1200, output_tokens: 500 }),
      ]);

      const [request] = openai.requests.slice(before);
      expect(request.path).toBe('/v1/chat/completions');
      expect(request.headers.authorization).toBe(`Bearer ${secretValue}`);
      expect(request.body).toEqual(
        expect.objectContaining({
          model: 'gpt-test',
          stream: true,
          stream_options: { include_usage: true },
          temperature: 0.5,
        }),
      );
      expect(request.body.messages[0]).toEqual({ role: 'system', content: 'You are terse.' });
      expect(request.body.messages[1].role).toBe('user');
      const user: string = request.body.messages[1].content;
      expect(user.startsWith('Summarize')).toBe(true);
      // In attachment order, the text ones only; the image named as not sent.
      expect(user.indexOf('first notes')).toBeLessThan(user.indexOf('{"a":1}'));
      expect(user.indexOf('{"a":1}')).toBeLessThan(user.indexOf('{"@id":"x"}'));
      expect(user).toMatch(/not sent: pic\.png/);
      expectNoCallerCredentials(openai);
    });

    it('on the Messages API: x-api-key with anthropic-version, cached input counted, max_tokens sent', async () => {
      anthropic.answer({
        kind: 'stream',
        deltas: ['Bon', 'jour'],
        inputTokens: 40,
        cachedTokens: 30,
        outputTokens: 7,
      });
      const agent = await anthropicAgent({ system: 'Be kind.', max_output_tokens: 321 });
      const before = anthropic.requests.length;
      const task = await runTask({ agent_id: agent.id, instruction: 'Greet' });
      const done = await waitForTask(task.id);
      expect(done.status).toBe('succeeded');
      expect(done.result).toEqual({
        output: 'Bonjour',
        model: 'claude-test-served',
        finish_reason: 'end_turn',
        usage: { input_tokens: 40, output_tokens: 7 },
      });
      const [request] = anthropic.requests.slice(before);
      expect(request.path).toBe('/v1/messages');
      expect(request.headers['x-api-key']).toBe(secretValue);
      expect(request.headers['anthropic-version']).toEqual(expect.any(String));
      expect(request.headers.authorization).toBeUndefined();
      expect(request.body).toEqual(
        expect.objectContaining({
          model: 'claude-test',
          system: 'Be kind.',
          max_tokens: 321,
          stream: true,
          messages: [{ role: 'user', content: 'Greet' }],
        }),
      );
      expectNoCallerCredentials(anthropic);
    });

    it('cuts attachments at LLM_MAX_ATTACHMENT_BYTES (1 MiB), naming the truncated one and those not sent', async () => {
      openai.answer({ kind: 'stream', deltas: ['ok'] });
      const agent = await openaiAgent();
      const big = await upload(Buffer.alloc(1024 * 1024 - 10, 'a'), 'big.txt', 'text/plain');
      const cut = await upload(Buffer.from('b'.repeat(100)), 'cut.txt', 'text/plain');
      const late = await upload(Buffer.from('never'), 'late.txt', 'text/plain');
      const before = openai.requests.length;
      const task = await runTask({ agent_id: agent.id, instruction: 'Read', attachments: [big, cut, late] });
      expect((await waitForTask(task.id)).status).toBe('succeeded');
      const user: string = openai.requests[before].body.messages.at(-1).content;
      expect(user).toContain(
        `--- attachment: cut.txt (text/plain, truncated to 10 bytes) ---\n${'b'.repeat(10)}\n`,
      );
      expect(user).not.toContain('never');
      expect(user).toMatch(/not sent: late\.txt/);
    });
  });

  describe('the budget', () => {
    it('caps the output tokens at what max_credits can pay (max_tokens), below max_output_tokens', async () => {
      openai.answer({ kind: 'stream', deltas: ['x'], outputTokens: 1 });
      const agent = await openaiAgent(
        { max_output_tokens: 100000 },
        { pricing: { credits_per_1k_input_tokens: 0, credits_per_1k_output_tokens: 10 } },
      );
      const before = openai.requests.length;
      const task = await runTask({ agent_id: agent.id, instruction: 'Go', max_credits: 5 });
      expect((await waitForTask(task.id)).status).toBe('succeeded');
      // floor((5 - 0) × 1000 / 10)
      expect(openai.requests[before].body.max_tokens).toBe(500);
    });

    it('takes the estimated input cost off the cap (Anthropic max_tokens)', async () => {
      anthropic.answer({ kind: 'stream', deltas: ['x'], outputTokens: 1 });
      const agent = await anthropicAgent(
        {},
        { pricing: { credits_per_1k_input_tokens: 10, credits_per_1k_output_tokens: 10 } },
      );
      const before = anthropic.requests.length;
      const task = await runTask({ agent_id: agent.id, instruction: 'Go', max_credits: 5 });
      expect((await waitForTask(task.id)).status).toBe('succeeded');
      const cap = anthropic.requests[before].body.max_tokens;
      expect(cap).toBeGreaterThan(0);
      expect(cap).toBeLessThan(500);
    });

    it('fails at once with budget_exceeded when the reservation cannot pay one output token', async () => {
      const agent = await openaiAgent(
        {},
        { pricing: { credits_per_1k_input_tokens: 100000, credits_per_1k_output_tokens: 10 } },
      );
      const before = openai.requests.length;
      const task = await runTask({ agent_id: agent.id, instruction: 'Go', max_credits: 1 });
      const done = await waitForTask(task.id);
      expect(done.status).toBe('failed');
      expect(done.error.code).toBe('budget_exceeded');
      expect(openai.requests.length).toBe(before);
    });
  });

  describe('failures', () => {
    it('cancelling the task aborts the upstream request within a second', async () => {
      openai.answer({ kind: 'hang' });
      const agent = await openaiAgent();
      const before = openai.requests.length;
      const task = await runTask({ agent_id: agent.id, instruction: 'Think forever' });
      await waitFor(
        async () => openai.requests.length,
        (n) => n > before,
        { timeoutMs: 30_000, intervalMs: 20 },
      );
      // The first delta has been streamed: the run is reading the stream.
      await waitFor(
        () => eventsOf(task.id),
        (events) => events.some((e) => e.type === 'output'),
        { timeoutMs: 30_000, intervalMs: 50 },
      );
      const aborted = openai.whenAborted();
      await t.http.post(`/v1/tasks/${task.id}/cancel`).set(org.auth).expect(200);
      const cancelledAt = Date.now();
      await aborted;
      expect(openai.requests[before].abortedAt! - cancelledAt).toBeLessThan(1000);
      expect((await waitForTask(task.id)).status).toBe('cancelled');
    });

    it('retries a 429 after its Retry-After, as a new attempt', async () => {
      openai.answer(
        { kind: 'error', status: 429, message: 'slow down', retryAfter: '2' },
        { kind: 'stream', deltas: ['after'] },
      );
      const agent = await openaiAgent();
      const before = openai.requests.length;
      const task = await runTask({ agent_id: agent.id, instruction: 'Go' });
      const done = await waitForTask(task.id);
      expect(done.status).toBe('succeeded');
      expect(done.attempts).toBe(2);
      const [first, second] = openai.requests.slice(before);
      expect(second.receivedAt - first.receivedAt).toBeGreaterThanOrEqual(1900);
    });

    it.each([500, 529])('retries a %i', async (status) => {
      anthropic.answer(
        { kind: 'error', status, message: 'overloaded' },
        { kind: 'stream', deltas: ['fine'] },
      );
      const agent = await anthropicAgent();
      const task = await runTask({ agent_id: agent.id, instruction: 'Go' });
      const done = await waitForTask(task.id);
      expect(done.status).toBe('succeeded');
      expect(done.attempts).toBe(2);
      expect(done.result.output).toBe('fine');
    });

    it('ends with upstream_error and the last message when every attempt fails', async () => {
      openai.answer({ kind: 'error', status: 503, message: 'down for maintenance' });
      const agent = await openaiAgent();
      const task = await runTask({ agent_id: agent.id, instruction: 'Go' });
      const done = await waitForTask(task.id);
      expect(done.status).toBe('failed');
      expect(done.attempts).toBe(3);
      expect(done.error.code).toBe('upstream_error');
      expect(done.error.message).toContain('down for maintenance');
    });

    it.each(['openai', 'anthropic'] as const)(
      '%s: another 4xx fails at once with upstream_error and the message, without the secret',
      async (provider) => {
        const upstream = provider === 'openai' ? openai : anthropic;
        upstream.answer({
          kind: 'error',
          status: 400,
          message: `Incorrect API key provided: ${secretValue}`,
        });
        const agent = provider === 'openai' ? await openaiAgent() : await anthropicAgent();
        const task = await runTask({ agent_id: agent.id, instruction: 'Go' });
        const done = await waitForTask(task.id);
        expect(done.status).toBe('failed');
        expect(done.attempts).toBe(1);
        expect(done.error.code).toBe('upstream_error');
        expect(done.error.message).toContain('Incorrect API key provided');
        expect(JSON.stringify(done)).not.toContain(secretValue);
        expect(JSON.stringify(await eventsOf(task.id))).not.toContain(secretValue);
      },
    );

    it('retries a refused connection, then ends with upstream_error', async () => {
      const closed = await LlmUpstream.start('openai');
      const baseUrl = closed.baseUrl;
      await closed.close();
      const agent = await openaiAgent({ base_url: baseUrl });
      const task = await runTask({ agent_id: agent.id, instruction: 'Go' });
      const done = await waitForTask(task.id);
      expect(done.status).toBe('failed');
      expect(done.attempts).toBe(3);
      expect(done.error.code).toBe('upstream_error');
    });
  });

  describe('configs', () => {
    const base = () => ({ provider: 'openai', model: 'm', secret_id: secretId, base_url: openai.baseUrl });
    const refused = async (config: Record<string, unknown>, auth: Auth = org.auth): Promise<void> => {
      const res = await t.http.post('/v1/agents').set(auth).send({ name: 'bad', type: 'llm', config });
      expectProblem(res, 400, 'invalid_config');
      expect(res.text).not.toContain(secretValue);
    };

    it('refuses an unknown secret, another organization’s, and configs out of bounds', async () => {
      await refused({ ...base(), secret_id: 'sec_000000000000000000000' });
      await refused({ ...base(), secret_id: secretId }, other.auth);
      await refused({ ...base(), provider: 'mistral' });
      await refused({ ...base(), model: '' });
      await refused({ ...base(), base_url: 'ftp://example.com' });
      await refused({ ...base(), temperature: 2.5 });
      await refused({ ...base(), provider: 'anthropic', temperature: 1.5 });
      await refused({ ...base(), max_output_tokens: 0 });
      await refused({ ...base(), max_output_tokens: 200001 });
      await refused({ ...base(), system: 'x'.repeat(32 * 1024 + 1) });
      await refused({ ...base(), extra: true });
      const { secret_id: _omitted, ...withoutSecret } = base();
      await refused(withoutSecret);
    });

    it('a secret named by an llm agent cannot be deleted (409 secret_in_use)', async () => {
      const agent = await openaiAgent();
      expectProblem(await t.http.delete(`/v1/secrets/${secretId}`).set(org.auth), 409, 'secret_in_use');
      await t.http.delete(`/v1/agents/${agent.id}`).set(org.auth).expect(204);
    });
  });
});

describe('llm agents under the default outbound policy', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { WORKER_CONCURRENCY: '0' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses a private base_url at create (400 invalid_config)', async () => {
    const org = await signUpOrganization(t.http, 'Private');
    const secret = await t.http
      .post('/v1/secrets')
      .set(org.auth)
      .send({ name: 's', value: 'v'.repeat(20) })
      .expect(201);
    for (const base_url of ['http://127.0.0.1:11434/v1', 'http://localhost:11434/v1', 'http://10.0.0.1/v1']) {
      const res = await t.http
        .post('/v1/agents')
        .set(org.auth)
        .send({
          name: 'local',
          type: 'llm',
          config: { provider: 'openai', model: 'm', secret_id: secret.body.id, base_url },
        });
      expectProblem(res, 400, 'invalid_config');
    }
  });
});
