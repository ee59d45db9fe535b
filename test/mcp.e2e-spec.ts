import type { AddressInfo } from 'node:net';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';
import { createKey, type CreatedKey, pollUntil } from './support/keys';
import { signUpOrganization, type SignedUpOrganization } from './support/factories';
import { startAppWithHeldRuns } from './support/held-runs';
import { startTestApp, type TestApp } from './support/test-app';
import { describeWithPostgres, sharedSecrets } from './support/instances';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { McpToolListStreams } from '../src/mcp/mcp-tool-list-streams';

/**
 * The MCP server at /mcp (CONTRACT, "AI assistants"), with the official SDK's clients, v1 and v2, as the
 * peers: the tools a credential may call and only those, run tools that create tasks as POST /v1/tasks
 * does, the key check's refusals with MCP's challenges, files as resources, and the protected resource
 * metadata that points a client at the authorization server.
 */

const PUBLIC_URL = 'https://gatehouse.test';

async function listening(t: TestApp): Promise<string> {
  const server = t.app.getHttpServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

type AnyClient = ClientV1 | ClientV2;

async function connectV1(url: string, key: string): Promise<ClientV1> {
  const client = new ClientV1({ name: 'test-v1', version: '1.0.0' });
  await client.connect(
    new TransportV1(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }),
  );
  return client;
}

async function connectV2(url: string, key: string): Promise<ClientV2> {
  const client = new ClientV2({ name: 'test-v2', version: '2.0.0' });
  await client.connect(
    new TransportV2(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }),
  );
  return client;
}

const toolNames = async (client: AnyClient) =>
  (await client.listTools()).tools.map((tool) => tool.name).sort();

/** A raw JSON-RPC POST to /mcp, as a client without the SDK sends it. */
function rpc(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2025-06-18',
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

const callOf = (name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name, arguments: args },
});

describe('MCP server', () => {
  let t: TestApp;
  let url: string;
  let org: SignedUpOrganization;
  let admin: CreatedKey;
  const clients: AnyClient[] = [];

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        PUBLIC_URL,
        WORKER_CONCURRENCY: '2',
        WORKER_POLL_MS: '50',
        MCP_ALLOWED_ORIGINS: 'https://inspector.test',
        MCP_MAX_UPLOAD_BYTES: '1000',
      },
    });
    url = await listening(t);
    org = await signUpOrganization(t.http);
    admin = await createKey(t.http, org.auth, { name: 'assistant' });
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    await t?.close();
  });

  it('initializes with serverInfo.name gatehouse for v1 and v2 clients, on the revisions they ask', async () => {
    const v1 = await connectV1(url, admin.key);
    const v2 = await connectV2(url, admin.key);
    clients.push(v1, v2);
    expect(v1.getServerVersion()?.name).toBe('gatehouse');
    expect(v2.getServerVersion()?.name).toBe('gatehouse');
    for (const version of ['2025-06-18', '2025-11-25']) {
      const res = await rpc(
        url,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
        },
        { Authorization: `Bearer ${admin.key}` },
      );
      expect(res.status).toBe(200);
      expect(await res.text()).toContain(`"protocolVersion":"${version}"`);
    }
  });

  it('lists the fixed tools and one run tool per agent, named after it, oldest first keeping the name', async () => {
    const first = await t.http.post('/v1/agents').set(org.auth).send({ name: 'Report Writer', type: 'echo' });
    const second = await t.http
      .post('/v1/agents')
      .set(org.auth)
      .send({ name: 'report writer', type: 'echo' });
    expect([first.status, second.status]).toEqual([201, 201]);
    const client = await connectV1(url, admin.key);
    clients.push(client);
    const { tools } = await client.listTools();
    // One run tool per agent REST lists: the built-in ones (the deployment's extensions may add some) first.
    const agents = (await t.http.get('/v1/agents').set(org.auth).expect(200)).body.data as { name: string }[];
    const names = tools.map((tool) => tool.name);
    expect(names.filter((name) => name.startsWith('run_'))).toHaveLength(agents.length);
    expect(names).toEqual(
      expect.arrayContaining([
        'cancel_task',
        'get_task',
        'list_agents',
        'list_tasks',
        'run_echo',
        'run_report_writer',
        'run_report_writer_2',
        'upload_file',
      ]),
    );
    const writer = tools.find((tool) => tool.name === 'run_report_writer')!;
    expect(writer.title).toBe('Report Writer');
    expect(writer._meta).toEqual({ 'gatehouse/agent_id': first.body.id });
    expect(tools.find((tool) => tool.name === 'run_report_writer_2')!._meta).toEqual({
      'gatehouse/agent_id': second.body.id,
    });
    expect(Object.keys(writer.inputSchema.properties ?? {}).sort()).toEqual([
      'attachments',
      'instruction',
      'max_credits',
      'wait_seconds',
    ]);
  });

  it('runs an agent as a task, answering the task once it ended, and the task is the REST one', async () => {
    const client = await connectV2(url, admin.key);
    clients.push(client);
    const result = await client.callTool({ name: 'run_echo', arguments: { instruction: 'hello over MCP' } });
    expect(result.isError).toBeFalsy();
    const task = result.structuredContent as Record<string, any>;
    expect(task).toMatchObject({ status: 'succeeded', instruction: 'hello over MCP', agent_type: 'echo' });
    expect(JSON.parse((result.content as { text: string }[])[0].text)).toMatchObject({
      output: 'hello over MCP',
    });
    const rest = await t.http.get(`/v1/tasks/${task.id}`).set(org.auth).expect(200);
    expect(rest.body).toEqual(task);

    const got = await client.callTool({ name: 'get_task', arguments: { task_id: task.id } });
    expect(got.structuredContent).toEqual(task);
    const listed = await client.callTool({
      name: 'list_tasks',
      arguments: { status: 'succeeded', limit: 5 },
    });
    expect((listed.structuredContent as { data: { id: string }[] }).data.map((row) => row.id)).toContain(
      task.id,
    );
  });

  it('answers a run refused by the task rules as a tool error, and creates nothing', async () => {
    const client = await connectV1(url, admin.key);
    clients.push(client);
    const before = (await t.http.get('/v1/tasks').set(org.auth).expect(200)).body.data.length;
    const result = await client.callTool({
      name: 'run_echo',
      arguments: { instruction: 'x', attachments: ['file_doesnotexist00000000000'] },
    });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0].text).toContain('attachment_not_found');
    expect((await t.http.get('/v1/tasks').set(org.auth).expect(200)).body.data.length).toBe(before);
  });

  it('uploads a file, reads it back as a resource, and refuses one over MCP_MAX_UPLOAD_BYTES keeping nothing', async () => {
    const client = await connectV1(url, admin.key);
    clients.push(client);
    const uploaded = await client.callTool({
      name: 'upload_file',
      arguments: { filename: 'notes.txt', content: 'plain text', content_type: 'text/plain' },
    });
    const file = uploaded.structuredContent as Record<string, any>;
    expect(file).toMatchObject({ filename: 'notes.txt', content_type: 'text/plain', size: 10 });
    expect((await t.http.get(`/v1/files/${file.id}`).set(org.auth).expect(200)).body).toEqual(file);
    const read = await client.readResource({ uri: `gatehouse://files/${file.id}` });
    expect(read.contents[0]).toMatchObject({ text: 'plain text', mimeType: 'text/plain' });

    const binary = await client.callTool({
      name: 'upload_file',
      arguments: { filename: 'b.bin', content_base64: Buffer.from([0, 1, 2, 255]).toString('base64') },
    });
    const blob = await client.readResource({
      uri: `gatehouse://files/${(binary.structuredContent as any).id}`,
    });
    expect(Buffer.from((blob.contents[0] as { blob: string }).blob, 'base64')).toEqual(
      Buffer.from([0, 1, 2, 255]),
    );

    const files = async () => (await t.http.get('/v1/files').set(org.auth).expect(200)).body.data.length;
    const count = await files();
    const tooLarge = await client.callTool({
      name: 'upload_file',
      arguments: { filename: 'big.bin', content_base64: Buffer.alloc(1001).toString('base64') },
    });
    expect(tooLarge.isError).toBe(true);
    expect(await files()).toBe(count);
  });

  it("answers another organization's task and file as unknown, naming nothing of them", async () => {
    const other = await signUpOrganization(t.http, 'Other');
    const theirs = await t.http
      .post('/v1/tasks')
      .set(other.auth)
      .send({ instruction: 'secret plans', agent_type: 'echo' })
      .expect(202);
    const client = await connectV1(url, admin.key);
    clients.push(client);
    const result = await client.callTool({ name: 'get_task', arguments: { task_id: theirs.body.id } });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result)).not.toContain('secret plans');
    const theirFile = await t.http
      .post('/v1/files')
      .set(other.auth)
      .attach('file', Buffer.from('theirs'), 'theirs.txt')
      .expect(201);
    await expect(client.readResource({ uri: `gatehouse://files/${theirFile.body.id}` })).rejects.toThrow(
      /not found/,
    );
  });

  it('shows a viewer only what it may call, and refuses a call of another tool with insufficient_scope', async () => {
    const viewer = await createKey(t.http, org.auth, { name: 'viewer', role: 'viewer' });
    const client = await connectV1(url, viewer.key);
    clients.push(client);
    const names = await toolNames(client);
    expect(names).not.toContain('run_echo');
    expect(names).not.toContain('upload_file');
    expect(names).toContain('list_agents');

    const res = await rpc(url, callOf('run_echo', { instruction: 'x' }), {
      Authorization: `Bearer ${viewer.key}`,
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="tasks:create", resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"`,
    );
    expect(((await res.json()) as { code: string }).code).toBe('forbidden');
  });

  it('answers 401 with the resource metadata challenge, invalid_token when a credential was presented', async () => {
    const metadata = `resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"`;
    const scope = 'scope="agents:read tasks:create tasks:read files:read files:create"';
    const none = await rpc(url, callOf('list_agents'));
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer ${metadata}, ${scope}`);
    expect(((await none.json()) as { code: string }).code).toBe('missing_credentials');

    const revoked = await createKey(t.http, org.auth, { name: 'soon revoked' });
    await t.http.delete(`/v1/api-keys/${revoked.id}`).set(org.auth).expect(204);
    for (const key of [revoked.key, 'gh_live_not-a-key']) {
      const res = await rpc(url, callOf('list_agents'), { Authorization: `Bearer ${key}` });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", ${metadata}, ${scope}`);
    }
  });

  it('refuses an Origin that is not allowed before looking at the credential, and takes an allowed one', async () => {
    // However the router would match the path: with a trailing slash, in capitals, with a query.
    for (const spelling of [url, `${url}/`, url.replace(/\/mcp$/, '/MCP'), `${url}?x=1`]) {
      const refused = await rpc(spelling, callOf('list_agents'), {
        Origin: 'https://evil.test',
        Authorization: `Bearer ${admin.key}`,
      });
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { code: string }).code).toBe('origin_not_allowed');
    }
    const allowed = await rpc(url, callOf('list_agents'), {
      Origin: 'https://inspector.test',
      Authorization: `Bearer ${admin.key}`,
    });
    expect(allowed.status).toBe(200);
  });

  it('counts MCP requests against the key like REST ones: a rate-limited key gets 429 with Retry-After', async () => {
    const limited = await createKey(t.http, org.auth, {
      name: 'limited',
      rate_limit: { requests_per_minute: 1 },
    });
    expect((await rpc(url, callOf('list_agents'), { Authorization: `Bearer ${limited.key}` })).status).toBe(
      200,
    );
    const refused = await rpc(url, callOf('list_agents'), { Authorization: `Bearer ${limited.key}` });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(((await refused.json()) as { code: string }).code).toBe('rate_limited');
  });

  it('publishes protected resource metadata for /mcp and /v1', async () => {
    const mcp = await t.http.get('/.well-known/oauth-protected-resource/mcp').expect(200);
    expect(mcp.body).toMatchObject({
      resource: `${PUBLIC_URL}/mcp`,
      authorization_servers: [PUBLIC_URL],
      bearer_methods_supported: ['header'],
    });
    expect(mcp.body.scopes_supported).toEqual(expect.arrayContaining(['agents:read', 'tasks:create']));
    const rest = await t.http.get('/.well-known/oauth-protected-resource/v1').expect(200);
    expect(rest.body).toMatchObject({ resource: `${PUBLIC_URL}/v1`, authorization_servers: [PUBLIC_URL] });
  });
});

describe('MCP run tools and task progress', () => {
  it("sends the task's progress events as notifications/progress on the call that asked for them", async () => {
    const held = await startAppWithHeldRuns({ name: 'Held runner' });
    const client = new ClientV1({ name: 'progress', version: '1.0.0' });
    try {
      const key = await createKey(held.t.http, held.org.auth, { name: 'assistant' });
      await connectV1Into(client, await listening(held.t), key.key);
      const seen: { progress: number; total?: number; message?: string }[] = [];
      let heard!: () => void;
      const heardProgress = new Promise<void>((resolve) => (heard = resolve));
      const call = client.callTool(
        { name: 'run_held_runner', arguments: { instruction: 'work slowly' } },
        undefined,
        {
          onprogress: (progress) => {
            seen.push(progress);
            heard();
          },
          timeout: 60_000,
        },
      );
      const running = await pollRunning(held.t, held.org.auth);
      const run = await held.runs.nextStart(running);
      await held.t.http
        .post(`/v1/tasks/${running}/events`)
        .set({ Authorization: `Bearer ${run.token}` })
        .send({ type: 'progress', data: { message: 'halfway', percent: 50 } })
        .expect(202);
      await heardProgress;
      held.runs.releaseAll();
      const result = await call;
      expect(result.structuredContent).toMatchObject({ id: running, status: 'succeeded' });
      expect(seen[0]).toEqual({ progress: 50, total: 100, message: 'halfway' });
    } finally {
      await client.close().catch(() => undefined);
      await held.close();
    }
  });
});

async function connectV1Into(client: ClientV1, url: string, key: string): Promise<void> {
  await client.connect(
    new TransportV1(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }),
  );
}

/** The id of the organization's one running task, once the worker started it (the agent holds it). */
async function pollRunning(t: TestApp, auth: { Authorization: string }): Promise<string> {
  const { value } = await pollUntil(
    async () => (await t.http.get('/v1/tasks').query({ status: 'running' }).set(auth).expect(200)).body.data,
    (running: { id: string }[]) => running.length > 0,
    { timeoutMs: 30_000 },
  );
  expect(value).toHaveLength(1);
  return value[0].id;
}

describeWithPostgres('MCP across instances')('MCP across instances', () => {
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let urlB: string;
  let org: SignedUpOrganization;
  let key: CreatedKey;

  beforeAll(async () => {
    const env = { ...sharedSecrets(), PUBLIC_URL, WORKER_CONCURRENCY: '1', WORKER_POLL_MS: '50' };
    a = await startTestApp({ env });
    b = await startTestApp({ databaseUrl: a.databaseUrl, env });
    [urlA, urlB] = [await listening(a), await listening(b)];
    org = await signUpOrganization(a.http);
    key = await createKey(a.http, org.auth, { name: 'assistant' });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('serves a client initialized on one instance on the other: no session to be sticky to', async () => {
    const client = await connectV1(urlA, key.key);
    try {
      const init = await rpc(
        urlA,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 'raw', version: '0' },
          },
        },
        { Authorization: `Bearer ${key.key}` },
      );
      expect(init.headers.get('mcp-session-id')).toBeNull();
      const onB = await rpc(
        urlB,
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        {
          Authorization: `Bearer ${key.key}`,
          'MCP-Protocol-Version': '2025-11-25',
        },
      );
      expect(onB.status).toBe(200);
      expect(await onB.text()).toContain('"run_echo"');
      expect(await toolNames(client)).toContain('run_echo');
    } finally {
      await client.close();
    }
  });

  it('sends tools/list_changed on an open stream on instance B when an agent is created and deleted on A', async () => {
    const client = new ClientV1({ name: 'listener', version: '1.0.0' });
    const changes: string[] = [];
    let told!: () => void;
    let changed = new Promise<void>((resolve) => (told = resolve));
    client.setNotificationHandler(ToolListChangedNotificationSchema, (notification) => {
      changes.push(notification.method);
      told();
    });
    try {
      await connectV1Into(client, urlB, key.key);
      const streams = b.app.get(McpToolListStreams);
      const { value: open } = await pollUntil(
        () => Promise.resolve(streams.openCount(org.organizationId)),
        (count) => count > 0,
      );
      expect(open).toBe(1);

      const created = await a.http
        .post('/v1/agents')
        .set(org.auth)
        .send({ name: 'Fresh', type: 'echo' })
        .expect(201);
      await changed;
      expect(await toolNames(client)).toContain('run_fresh');

      changed = new Promise<void>((resolve) => (told = resolve));
      await a.http.delete(`/v1/agents/${created.body.id}`).set(org.auth).expect(204);
      await changed;
      expect(await toolNames(client)).not.toContain('run_fresh');
      expect(changes).toEqual(['notifications/tools/list_changed', 'notifications/tools/list_changed']);
    } finally {
      await client.close();
    }
  });
});
