import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { Role, TaskState, type Part, type StreamResponse } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { HeldRuns } from './support/held-runs';
import { createKey, type CreatedKey, pollUntil } from './support/keys';
import { expectProblem, signUpOrganization, type SignedUpOrganization } from './support/factories';
import { describeWithPostgres, sharedSecrets } from './support/instances';
import { CALLS_LOCAL_TARGETS } from './support/outbound-targets';
import { startTestApp, type TestApp } from './support/test-app';
import { DataSource } from 'typeorm';

/**
 * Every agent over A2A (CONTRACT, "Agents for other agents: A2A"), driven by the official JS SDK's
 * client (1.0) and by raw JSON-RPC where the wire itself is the point (0.3, versions, permissions).
 * The app listens on the port its PUBLIC_URL names: the SDK's client calls the URL the card gives.
 * Runs of the http agent are held (HeldRuns) until a test lets them go; none waits for a duration.
 */

const EVENTUALLY = { timeoutMs: 60_000, intervalMs: 25 };

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** An app on the port its PUBLIC_URL names, with a task worker. */
async function startA2aApp(env: Record<string, string> = {}, databaseUrl?: string) {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const t = await startTestApp({
    env: {
      ...CALLS_LOCAL_TARGETS,
      WORKER_CONCURRENCY: '4',
      PUBLIC_URL: publicUrl,
      // Push notifications are the webhook worker's deliveries: one loop, retried after 1 s.
      WEBHOOK_WORKERS: '1',
      WEBHOOK_RETRY_SCHEDULE_SECONDS: '1,1,1',
      ...env,
    },
    ...(databaseUrl ? { databaseUrl } : {}),
  });
  await new Promise<void>((resolve) => t.app.getHttpServer().listen(port, '127.0.0.1', resolve));
  return { t, publicUrl };
}

/** A receiver of push notifications on loopback: each POST's headers and body, answered by `answer`. */
async function startReceiver(answer: (n: number) => number = () => 200) {
  const received: { headers: Record<string, unknown>; body: any }[] = [];
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      res.statusCode = answer(received.length);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/a2a-push`;
  return { url, received, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** The SDK's client of one agent, authenticated with `credential` (a bearer API key or token). */
async function clientOf(publicUrl: string, agentId: string, credential: string): Promise<Client> {
  const authenticated: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${credential}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: authenticated })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authenticated }),
  });
  return factory.createFromUrl(`${publicUrl}/a2a/${agentId}/.well-known/agent-card.json`, '');
}

const textPart = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

const userMessage = (parts: Part[], contextId = '') => ({
  messageId: `m-${Math.random().toString(36).slice(2)}`,
  contextId,
  taskId: '',
  role: Role.ROLE_USER,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

const send = (
  parts: Part[],
  options: { returnImmediately?: boolean; contextId?: string; metadata?: Record<string, unknown> } = {},
) => ({
  tenant: '',
  message: userMessage(parts, options.contextId),
  configuration: {
    acceptedOutputModes: [],
    taskPushNotificationConfig: undefined,
    returnImmediately: options.returnImmediately ?? false,
  },
  metadata: options.metadata,
});

/** A raw JSON-RPC call to an agent, with the headers given. */
async function rpc(publicUrl: string, agentId: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${publicUrl}/a2a/${agentId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, any> };
}

const taskOfResult = (result: unknown) => {
  const value = result as { $case?: string; value?: unknown } & Record<string, unknown>;
  // The client answers a SendMessage with the task (the SDK's SendMessageResult: a Task or a Message).
  return ('id' in value ? value : (value.value ?? value)) as {
    id: string;
    contextId: string;
    status?: { state: TaskState; message?: { parts: Part[] } };
    artifacts: { artifactId: string; parts: Part[] }[];
  };
};

async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('A2A: agents for other agents', () => {
  let t: TestApp;
  let publicUrl: string;
  let runs: HeldRuns;
  let org: SignedUpOrganization;
  let admin: CreatedKey;
  let heldAgent: string;
  let echoAgent: string;
  let client: Client;

  beforeAll(async () => {
    runs = await HeldRuns.start();
    ({ t, publicUrl } = await startA2aApp());
    org = await signUpOrganization(t.http);
    admin = await createKey(t.http, org.auth, { name: 'orchestrator' });
    heldAgent = await runs.agent(t.http, org.auth, { name: 'Held worker', description: 'Holds its runs' });
    const echo = await t.http
      .post('/v1/agents')
      .set(org.auth)
      .send({ name: 'Echo', type: 'echo' })
      .expect(201);
    echoAgent = echo.body.id;
    client = await clientOf(publicUrl, echoAgent, admin.key);
  });
  afterAll(async () => {
    runs?.releaseAll();
    await runs?.close();
    await t?.close();
  });

  it('serves the agent card in the 1.0 form for A2A-Version 1.0 and the 0.3 form without it', async () => {
    const v1 = await fetch(`${publicUrl}/a2a/${heldAgent}/.well-known/agent-card.json`, {
      headers: { Authorization: `Bearer ${admin.key}`, 'A2A-Version': '1.0' },
    });
    expect(v1.status).toBe(200);
    const card = (await v1.json()) as Record<string, any>;
    const url = `${publicUrl}/a2a/${heldAgent}`;
    expect(card).toMatchObject({
      name: 'Held worker',
      description: 'Holds its runs',
      version: expect.any(String),
      supportedInterfaces: [
        { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
      capabilities: { streaming: true, pushNotifications: true },
      defaultInputModes: expect.any(Array),
      defaultOutputModes: expect.any(Array),
      skills: [expect.objectContaining({ id: heldAgent, name: 'Held worker' })],
    });
    expect(Object.keys(card.securitySchemes).sort()).toEqual(['bearer', 'oauth2']);
    expect(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe('Bearer');
    expect(card.securitySchemes.oauth2.oauth2SecurityScheme.flows.authorizationCode).toMatchObject({
      authorizationUrl: `${publicUrl}/oauth/authorize`,
      tokenUrl: `${publicUrl}/oauth/token`,
      pkceRequired: true,
    });
    // Alternatives: one requirement per scheme.
    expect(card.securityRequirements.map((r: { schemes: object }) => Object.keys(r.schemes))).toEqual([
      ['bearer'],
      ['oauth2'],
    ]);

    const legacy = await fetch(`${publicUrl}/a2a/${heldAgent}/.well-known/agent-card.json`, {
      headers: { Authorization: `Bearer ${admin.key}` },
    });
    expect(legacy.status).toBe(200);
    expect(await legacy.json()).toMatchObject({
      name: 'Held worker',
      url,
      protocolVersion: '0.3',
      preferredTransport: 'JSONRPC',
      capabilities: { streaming: true, pushNotifications: true },
    });

    const metadata = await t.http.get('/.well-known/oauth-protected-resource/a2a').expect(200);
    expect(metadata.body).toMatchObject({ resource: `${publicUrl}/a2a`, authorization_servers: [publicUrl] });
  });

  it("answers 404 for another organization's agent, and a challenge without a credential", async () => {
    const other = await signUpOrganization(t.http);
    const res = await t.http.get(`/a2a/${heldAgent}/.well-known/agent-card.json`).set(other.auth);
    expectProblem(res, 404);
    const anonymous = await t.http
      .post(`/a2a/${heldAgent}`)
      .send({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } });
    expectProblem(anonymous, 401);
    expect(anonymous.headers['www-authenticate']).toContain(
      `resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/a2a"`,
    );
  });

  it('refuses a key without the method’s permission with 403 and insufficient_scope', async () => {
    const viewer = await createKey(t.http, org.auth, { name: 'viewer', role: 'viewer' });
    const res = await rpc(
      publicUrl,
      echoAgent,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
      },
      { Authorization: `Bearer ${viewer.key}`, 'A2A-Version': '1.0' },
    );
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toContain('error="insufficient_scope", scope="tasks:create"');
  });

  it('answers a blocking SendMessage with the finished task and its artifacts', async () => {
    const answer = taskOfResult(await client.sendMessage(send([textPart('hello'), textPart('agents')])));
    expect(answer.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const task = await t.http.get(`/v1/tasks/${answer.id}`).set(org.auth).expect(200);
    expect(task.body).toMatchObject({
      status: 'succeeded',
      instruction: 'hello\nagents',
      agent_id: echoAgent,
    });
    const result = answer.artifacts.find((a) => a.artifactId === 'result');
    expect(result?.parts[0].content).toEqual({ $case: 'data', value: task.body.result });
    expect(answer.contextId).toEqual(expect.any(String));
  });

  it('takes max_credits from the metadata, and shows history as asked (historyLength)', async () => {
    const answer = taskOfResult(
      await client.sendMessage(send([textPart('priced')], { metadata: { 'gatehouse/max_credits': 7 } })),
    );
    const task = await t.http.get(`/v1/tasks/${answer.id}`).set(org.auth).expect(200);
    expect(task.body.max_credits).toBe(7);
    const full = await client.getTask({ tenant: '', id: answer.id });
    expect(full.history.map((m) => [m.role, m.parts[0].content])).toEqual([
      [Role.ROLE_USER, { $case: 'text', value: 'priced' }],
    ]);
    expect((await client.getTask({ tenant: '', id: answer.id, historyLength: 0 })).history).toEqual([]);
    await expect(
      client.sendMessage(send([textPart('x')], { metadata: { 'gatehouse/max_credits': -1 } })),
    ).rejects.toThrow(/max_credits/);
  });

  it('answers at once with returnImmediately, and the task is read later with GetTask', async () => {
    const held = await clientOf(publicUrl, heldAgent, admin.key);
    const answer = taskOfResult(
      await held.sendMessage(send([textPart('later')], { returnImmediately: true })),
    );
    // The agent holds the run: the answer came before the task could end.
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(answer.status?.state);
    await runs.nextStart(answer.id);
    runs.releaseAll();
    const done = await pollUntil(
      async () => (await held.getTask({ tenant: '', id: answer.id })).status?.state,
      (state) => state === TaskState.TASK_STATE_COMPLETED,
      EVENTUALLY,
    );
    expect(done.value).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('takes file parts: inline bytes as a new upload, a URL of one of the organization’s files', async () => {
    const uploaded = await t.http
      .post('/v1/files')
      .set(org.auth)
      .attach('file', Buffer.from('ledger'), 'ledger.txt')
      .expect(201);
    const inline: Part = {
      content: { $case: 'raw', value: Buffer.from('inline notes') },
      metadata: undefined,
      filename: 'notes.txt',
      mediaType: 'text/plain',
    };
    const byUrl: Part = {
      content: { $case: 'url', value: `${publicUrl}/v1/files/${uploaded.body.id}/content` },
      metadata: undefined,
      filename: 'ledger.txt',
      mediaType: 'text/plain',
    };
    const answer = taskOfResult(await client.sendMessage(send([textPart('read these'), byUrl, inline])));
    const task = await t.http.get(`/v1/tasks/${answer.id}`).set(org.auth).expect(200);
    expect(task.body.attachments).toHaveLength(2);
    expect(task.body.attachments[0]).toBe(uploaded.body.id);
    const stored = await t.http
      .get(`/v1/files/${task.body.attachments[1]}/content`)
      .set(org.auth)
      .expect(200);
    expect(stored.text ?? stored.body.toString()).toBe('inline notes');

    const foreign: Part = { ...byUrl, content: { $case: 'url', value: 'https://elsewhere.test/file' } };
    await expect(client.sendMessage(send([textPart('x'), foreign]))).rejects.toThrow(/file part's url/);
  });

  it('streams the task: its state first, progress, output deltas, the result and the end, in order', async () => {
    const held = await clientOf(publicUrl, heldAgent, admin.key);
    const stream = held.sendMessageStream(send([textPart('stream it')]));
    const first = await stream.next();
    expect(first.value?.payload?.$case).toBe('task');
    const taskId = (first.value!.payload!.value as { id: string }).id;
    const run = await runs.nextStart(taskId);
    const tokenAuth = { Authorization: `Bearer ${run.token}` };
    await t.http
      .post(`/v1/tasks/${taskId}/events`)
      .set(tokenAuth)
      .send({ type: 'progress', data: { message: 'reading', percent: 50 } })
      .expect(202);
    await t.http
      .post(`/v1/tasks/${taskId}/events`)
      .set(tokenAuth)
      .send({ type: 'output', data: { delta: 'Hel' } })
      .expect(202);
    await t.http
      .post(`/v1/tasks/${taskId}/events`)
      .set(tokenAuth)
      .send({ type: 'output', data: { delta: 'lo' } })
      .expect(202);
    runs.releaseAll();
    const rest: StreamResponse[] = [];
    for (let next = await stream.next(); !next.done; next = await stream.next()) rest.push(next.value);
    const kinds = rest.map((event) => event.payload?.$case);
    const states = rest
      .filter((event) => event.payload?.$case === 'statusUpdate')
      .map((event) => (event.payload!.value as { status: { state: TaskState } }).status.state);
    expect(states[states.length - 1]).toBe(TaskState.TASK_STATE_COMPLETED);
    const progress = rest.find(
      (event) =>
        event.payload?.$case === 'statusUpdate' &&
        (event.payload.value as { status: { message?: unknown } }).status.message !== undefined,
    );
    expect(progress?.payload?.value).toMatchObject({
      status: {
        state: TaskState.TASK_STATE_WORKING,
        message: { parts: [{ content: { $case: 'text', value: 'reading' } }] },
      },
    });
    const deltas = rest
      .filter((event) => event.payload?.$case === 'artifactUpdate')
      .map(
        (event) =>
          event.payload!.value as { artifact: { artifactId: string; parts: Part[] }; append: boolean },
      );
    const output = deltas.filter((d) => d.artifact.artifactId === 'output');
    expect(output.map((d) => [d.artifact.parts[0].content, d.append])).toEqual([
      [{ $case: 'text', value: 'Hel' }, false],
      [{ $case: 'text', value: 'lo' }, true],
    ]);
    expect(deltas.some((d) => d.artifact.artifactId === 'result')).toBe(true);
    expect(kinds[kinds.length - 1]).toBe('statusUpdate');
  });

  it('cancels a running task, and refuses to cancel or follow a finished one', async () => {
    const held = await clientOf(publicUrl, heldAgent, admin.key);
    const answer = taskOfResult(
      await held.sendMessage(send([textPart('cancel me')], { returnImmediately: true })),
    );
    await runs.nextStart(answer.id);
    const cancelled = await held.cancelTask({ tenant: '', id: answer.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(held.cancelTask({ tenant: '', id: answer.id, metadata: undefined })).rejects.toThrow(
      /cancelled|cancel/i,
    );
    await expect(collect(held.resubscribeTask({ tenant: '', id: answer.id }))).rejects.toThrow(
      /finished|cancelled/,
    );
  });

  it('lists the tasks of a conversation, and finds none of another organization', async () => {
    const contextId = `ctx-${Date.now()}`;
    const a = taskOfResult(await client.sendMessage(send([textPart('one')], { contextId })));
    const b = taskOfResult(await client.sendMessage(send([textPart('two')], { contextId })));
    await client.sendMessage(send([textPart('elsewhere')]));
    expect(a.contextId).toBe(contextId);
    const listed = await client.listTasks({
      tenant: '',
      contextId,
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageToken: '',
      statusTimestampAfter: undefined,
    });
    expect(listed.tasks.map((task) => task.id).sort()).toEqual([a.id, b.id].sort());
    const cancelledOnly = await client.listTasks({
      tenant: '',
      contextId,
      status: TaskState.TASK_STATE_CANCELED,
      pageToken: '',
      statusTimestampAfter: undefined,
    });
    expect(cancelledOnly.tasks).toEqual([]);

    const other = await signUpOrganization(t.http);
    const otherKey = await createKey(t.http, other.auth, { name: 'other' });
    // This organization's agent is not found with another's key (404); nor is its task through the other's agent.
    const res = await rpc(
      publicUrl,
      echoAgent,
      { jsonrpc: '2.0', id: 7, method: 'GetTask', params: { id: a.id } },
      { Authorization: `Bearer ${otherKey.key}`, 'A2A-Version': '1.0' },
    );
    expect(res.status).toBe(404);
    const foreignEcho = await t.http
      .post('/v1/agents')
      .set(other.auth)
      .send({ name: 'Echo', type: 'echo' })
      .expect(201);
    const cross = await rpc(
      publicUrl,
      foreignEcho.body.id,
      { jsonrpc: '2.0', id: 8, method: 'GetTask', params: { id: a.id } },
      { Authorization: `Bearer ${otherKey.key}`, 'A2A-Version': '1.0' },
    );
    expect(cross.status).toBe(200);
    expect(cross.body.error).toMatchObject({ code: -32001 });
  });

  it('delivers each status change after a push config exists, with its token, retried after a failure', async () => {
    // The first POST fails: the delivery is retried on the webhooks' schedule (1 s here), once more only.
    const receiver = await startReceiver((n) => (n === 1 ? 500 : 200));
    try {
      const held = await clientOf(publicUrl, heldAgent, admin.key);
      const answer = taskOfResult(
        await held.sendMessage(send([textPart('notify me')], { returnImmediately: true })),
      );
      await runs.nextStart(answer.id);
      const config = await held.createTaskPushNotificationConfig({
        tenant: '',
        id: 'orchestrator-1',
        taskId: answer.id,
        url: receiver.url,
        token: 'receiver-token-1',
        authentication: undefined,
      });
      expect(config).toMatchObject({ id: 'orchestrator-1', taskId: answer.id, url: receiver.url, token: '' });
      const listed = await held.listTaskPushNotificationConfig({
        tenant: '',
        taskId: answer.id,
        pageSize: 0,
        pageToken: '',
      });
      expect(listed.configs.map((c) => c.id)).toEqual(['orchestrator-1']);
      runs.releaseAll();
      await pollUntil(
        async () => receiver.received.length,
        (n) => n >= 2,
        EVENTUALLY,
      );
      // The config came after the task was running: only its end is delivered, twice (500, then 200).
      for (const post of receiver.received) {
        expect(post.headers['x-a2a-notification-token']).toBe('receiver-token-1');
        expect(post.body).toMatchObject({
          statusUpdate: {
            taskId: answer.id,
            contextId: answer.contextId,
            status: { state: 'TASK_STATE_COMPLETED' },
          },
        });
      }
      // The receiver answered before the worker records the attempt: wait for the record.
      const deliveries = await pollUntil(
        () =>
          t.app
            .get(DataSource)
            .query<{ status: string; attempts: number }[]>(
              `SELECT status, attempts FROM webhook_deliveries WHERE a2a_task_id = $1`,
              [answer.id],
            ),
        (rows) => rows.every((row) => row.status !== 'pending'),
        EVENTUALLY,
      );
      expect(deliveries.value).toEqual([{ status: 'succeeded', attempts: 2 }]);
      expect(receiver.received).toHaveLength(2);

      await held.deleteTaskPushNotificationConfig({ tenant: '', taskId: answer.id, id: 'orchestrator-1' });
      await expect(
        held.getTaskPushNotificationConfig({ tenant: '', taskId: answer.id, id: 'orchestrator-1' }),
      ).rejects.toThrow(/no push notification config/);
    } finally {
      await receiver.close();
    }
  });

  it('refuses a push config for a URL the outbound policy refuses, and for another organization’s task', async () => {
    const strict = await startA2aApp({ ALLOW_PRIVATE_NETWORK_TARGETS: 'false' }, t.databaseUrl);
    try {
      const strictOrg = await signUpOrganization(strict.t.http);
      const key = await createKey(strict.t.http, strictOrg.auth, { name: 'strict' });
      const echo = await strict.t.http
        .post('/v1/agents')
        .set(strictOrg.auth)
        .send({ name: 'Echo', type: 'echo' })
        .expect(201);
      const strictClient = await clientOf(strict.publicUrl, echo.body.id, key.key);
      const answer = taskOfResult(await strictClient.sendMessage(send([textPart('x')])));
      await expect(
        strictClient.createTaskPushNotificationConfig({
          tenant: '',
          id: '',
          taskId: answer.id,
          url: 'http://127.0.0.1:9/private',
          token: '',
          authentication: undefined,
        }),
      ).rejects.toThrow();
      const other = await signUpOrganization(t.http);
      const otherKey = await createKey(t.http, other.auth, { name: 'other' });
      const otherEcho = await t.http
        .post('/v1/agents')
        .set(other.auth)
        .send({ name: 'Echo', type: 'echo' })
        .expect(201);
      const res = await rpc(
        publicUrl,
        otherEcho.body.id,
        {
          jsonrpc: '2.0',
          id: 3,
          method: 'CreateTaskPushNotificationConfig',
          params: { taskId: answer.id, url: 'https://receiver.test/hook' },
        },
        { Authorization: `Bearer ${otherKey.key}`, 'A2A-Version': '1.0' },
      );
      expect(res.body.error).toMatchObject({ code: -32001 });
    } finally {
      await strict.t.close();
    }
  });

  it('serves v0.3 requests (no A2A-Version header) and refuses versions it does not speak', async () => {
    const legacy = await rpc(
      publicUrl,
      echoAgent,
      {
        jsonrpc: '2.0',
        id: 'old',
        method: 'message/send',
        params: {
          message: {
            kind: 'message',
            messageId: 'm1',
            role: 'user',
            parts: [{ kind: 'text', text: 'from 0.3' }],
          },
        },
      },
      { Authorization: `Bearer ${admin.key}` },
    );
    expect(legacy.status).toBe(200);
    expect(legacy.body).toMatchObject({
      jsonrpc: '2.0',
      id: 'old',
      result: { kind: 'task', status: { state: 'completed' } },
    });

    const future = await rpc(
      publicUrl,
      echoAgent,
      { jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: legacy.body.result.id } },
      { Authorization: `Bearer ${admin.key}`, 'A2A-Version': '9.9' },
    );
    expect(future.body.error).toMatchObject({ message: expect.stringContaining("'9.9' is not supported") });
  });
});

describeWithPostgres('A2A across instances')('A2A across instances', () => {
  let a: Awaited<ReturnType<typeof startA2aApp>>;
  let b: Awaited<ReturnType<typeof startA2aApp>>;
  let runs: HeldRuns;
  beforeAll(async () => {
    runs = await HeldRuns.start();
    const env = sharedSecrets();
    a = await startA2aApp(env);
    b = await startA2aApp({ ...env, WORKER_CONCURRENCY: '0' }, a.t.databaseUrl);
  });
  afterAll(async () => {
    runs?.releaseAll();
    await runs?.close();
    await b?.t.close();
    await a?.t.close();
  });

  it('resubscribes on another instance and sees the task end there', async () => {
    const org = await signUpOrganization(a.t.http);
    const key = await createKey(a.t.http, org.auth, { name: 'orchestrator' });
    const agentId = await runs.agent(a.t.http, org.auth);
    const onA = await clientOf(a.publicUrl, agentId, key.key);
    const answer = taskOfResult(
      await onA.sendMessage(send([textPart('across')], { returnImmediately: true })),
    );
    await runs.nextStart(answer.id);
    const onB = await clientOf(b.publicUrl, agentId, key.key);
    const stream = onB.resubscribeTask({ tenant: '', id: answer.id });
    const first = await stream.next();
    expect(first.value?.payload?.$case).toBe('task');
    runs.releaseAll();
    const rest: StreamResponse[] = [];
    for (let next = await stream.next(); !next.done; next = await stream.next()) rest.push(next.value);
    const last = rest[rest.length - 1].payload;
    expect(last?.$case).toBe('statusUpdate');
    expect((last!.value as { status: { state: TaskState } }).status.state).toBe(
      TaskState.TASK_STATE_COMPLETED,
    );
  });
});
