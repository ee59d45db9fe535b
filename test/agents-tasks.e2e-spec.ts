import { ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import request, { type Response } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { FakeAgentServer, Gate, gate, sleep, waitFor } from './support/agent-server';
import {
  createUser,
  CreatedUser,
  expectProblem,
  listAll,
  signUpOrganization,
  SignedUpOrganization,
} from './support/factories';
import {
  createTestDatabase,
  dropTestDatabase,
  instanceDatabaseEnv,
  runRedisEnv,
  startTestApp,
  TestApp,
} from './support/test-app';
import { CALLS_LOCAL_TARGETS } from './support/outbound-targets';
import { freeLoopbackPort } from './support/ports';
import { compiledEntryPoint } from './support/compiled-app';

/**
 * Agents (the built-in echo agent and http agents behind the outbound-safety client) and tasks (the
 * durable queue: running, retries, redirects, cancellation, idempotency), over HTTP against the real
 * AppModule. A node:http server on 127.0.0.1 stands in for remote agents. What an agent or a task request
 * may name, organization scoping and the rules of Idempotency-Key and cancellation are the services'
 * (test/medium/agents.medium-spec.ts, tasks.medium-spec.ts); here, what the wire and the workers add.
 *
 * Instances:
 * - `t`: two task workers polling every 50 ms, private targets allowed (so the local fake agent can be
 *   reached), TASK_MAX_ATTEMPTS=2, and a 6 s lease (the heartbeat, a third of it, notices a cancellation
 *   within about 2 s).
 * - the crash test (PostgreSQL only) spawns its own instances.
 */

type Auth = { Authorization: string };

const PROJECT_ROOT = resolve(__dirname, '..');
const HAS_POSTGRES = Boolean(process.env.GATEHOUSE_TEST_SERVER_URL);
const FINAL = ['succeeded', 'failed', 'cancelled'];
const unique = (label: string): string => `${label}-${randomBytes(4).toString('hex')}`;
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** Polls GET /v1/tasks/{id} until the task has one of `statuses`; returns the last answer. */
async function waitForTask(
  http: TestAgent,
  auth: Auth,
  id: string,
  statuses: string[] = FINAL,
  timeoutMs = 60_000,
): Promise<any> {
  const res = await waitFor<Response>(
    () => http.get(`/v1/tasks/${id}`).set(auth),
    (r: Response) => r.status !== 200 || statuses.includes(r.body.status),
    { timeoutMs, intervalMs: 50 },
  );
  expect(res.status).toBe(200);
  expect(statuses).toContain(res.body.status);
  return res.body;
}

describe('agents and tasks', () => {
  let t: TestApp;
  let server: FakeAgentServer;
  let org: SignedUpOrganization;
  let other: SignedUpOrganization;
  let viewer: CreatedUser;
  const gates: Gate[] = [];

  /** A gate released at the latest when the suite ends, so no request is left hanging. */
  const heldGate = (): Gate => {
    const g = gate();
    gates.push(g);
    return g;
  };

  beforeAll(async () => {
    server = await FakeAgentServer.start();
    t = await startTestApp({
      env: {
        ...CALLS_LOCAL_TARGETS,
        WORKER_CONCURRENCY: '2',
        TASK_MAX_ATTEMPTS: '2',
        TASK_LEASE_MS: '6000',
        SHUTDOWN_GRACE_MS: '2000',
      },
    });
    org = await signUpOrganization(t.http, 'Agents');
    other = await signUpOrganization(t.http, 'Others');
    viewer = await createUser(t.http, org, 'viewer');
  });
  afterAll(async () => {
    for (const g of gates) g.release();
    await server?.close();
    await t?.close();
  });

  const createAgent = async (auth: Auth, body: Record<string, unknown>, app: TestApp = t): Promise<any> => {
    const res = await app.http.post('/v1/agents').set(auth).send(body);
    if (res.status !== 201) throw new Error(`creating an agent answered ${res.status}: ${res.text}`);
    return res.body;
  };

  /** Queues a task for a new http agent of `org` at `path`, and waits for it to end: the 202 and the end. */
  const runOnHttpAgent = async (path: string, instruction: string) => {
    const agentId = await httpAgent(org.auth, path);
    const res = await createTask(org.auth, { instruction, agent_type: 'http', agent_id: agentId }).expect(
      202,
    );
    return { res, done: await waitForTask(t.http, org.auth, res.body.id) };
  };

  /** An http agent of `auth`'s organization whose URL is `path` on the fake agent server. */
  const httpAgent = async (auth: Auth, path: string): Promise<string> =>
    (await createAgent(auth, { name: unique('remote'), type: 'http', config: { url: server.url(path) } })).id;

  const createTask = (auth: Record<string, string>, body: Record<string, unknown>, app: TestApp = t) =>
    app.http.post('/v1/tasks').set(auth).send(body);

  const uploadFile = async (auth: Auth, bytes: Buffer, filename: string): Promise<any> =>
    (await t.http.post('/v1/files').set(auth).attach('file', bytes, filename).expect(201)).body;

  const taskIds = async (auth: Auth, query = '', app: TestApp = t): Promise<string[]> =>
    (await listAll(app.http, `/v1/tasks${query}`, auth)).map((task: any) => task.id);

  describe('agents', () => {
    it("lists the built-in echo agent and the organization's own agents, never another organization's", async () => {
      const mine = await createAgent(org.auth, { name: unique('mine'), type: 'echo', description: 'ours' });
      const theirs = await createAgent(other.auth, { name: unique('theirs'), type: 'echo' });

      expect(mine).toEqual({
        id: expect.stringMatching(/^agent_[0-9A-Za-z]{22}$/),
        name: mine.name,
        type: 'echo',
        description: 'ours',
        built_in: false,
        config: {},
        // Free unless priced (contract, "Costs").
        pricing: { credits_per_1k_input_tokens: 0, credits_per_1k_output_tokens: 0 },
        default_max_credits: null,
        created_at: expect.any(String),
      });

      const listed = await listAll(t.http, '/v1/agents', org.auth);
      // The core's built-in agent (an extension in the deployment's list may add others).
      const echo = listed.filter((agent: any) => agent.built_in && agent.type === 'echo');
      expect(listed.filter((agent: any) => agent.built_in)[0]).toEqual(echo[0]);
      expect(echo).toEqual([
        expect.objectContaining({ id: expect.stringMatching(/^agent_/), type: 'echo', built_in: true }),
      ]);
      expect(listed.map((agent: any) => agent.id)).toContain(mine.id);
      expect(listed.map((agent: any) => agent.id)).not.toContain(theirs.id);
      expect(listed.find((agent: any) => agent.id === mine.id)).toEqual(mine);

      const theirList = await listAll(t.http, '/v1/agents', other.auth);
      expect(theirList.map((agent: any) => agent.id)).toEqual(
        expect.arrayContaining([echo[0].id, theirs.id]),
      );
      expect(theirList.map((agent: any) => agent.id)).not.toContain(mine.id);

      const builtIn = await t.http.get(`/v1/agents/${echo[0].id}`).set(org.auth).expect(200);
      expect(builtIn.body).toMatchObject({
        type: 'echo',
        built_in: true,
        pricing: { credits_per_1k_input_tokens: 0, credits_per_1k_output_tokens: 0 },
      });
    });

    it('creates, updates and deletes an agent', async () => {
      const agent = await createAgent(org.auth, {
        name: 'Summariser',
        type: 'http',
        config: { url: server.url('/summarise'), timeout_ms: 5000 },
      });
      expect(agent).toMatchObject({
        name: 'Summariser',
        type: 'http',
        built_in: false,
        description: null,
        config: { url: server.url('/summarise'), timeout_ms: 5000 },
      });

      const patched = await t.http
        .patch(`/v1/agents/${agent.id}`)
        .set(org.auth)
        .send({ name: 'Summariser 2', description: 'shorter', config: { url: server.url('/v2') } })
        .expect(200);
      expect(patched.body).toMatchObject({
        id: agent.id,
        name: 'Summariser 2',
        description: 'shorter',
        type: 'http',
        config: { url: server.url('/v2') },
      });
      const got = await t.http.get(`/v1/agents/${agent.id}`).set(org.auth).expect(200);
      expect(got.body).toEqual(patched.body);

      // An invalid config is refused and the agent keeps its old one.
      expectProblem(
        await t.http
          .patch(`/v1/agents/${agent.id}`)
          .set(org.auth)
          .send({ config: { url: 'ftp://files.example.test/' } }),
        400,
        'target_not_allowed',
      );
      expect((await t.http.get(`/v1/agents/${agent.id}`).set(org.auth).expect(200)).body).toEqual(
        patched.body,
      );

      await t.http.delete(`/v1/agents/${agent.id}`).set(org.auth).expect(204);
      expectProblem(await t.http.get(`/v1/agents/${agent.id}`).set(org.auth), 404, 'not_found');
      expectProblem(await t.http.delete(`/v1/agents/${agent.id}`).set(org.auth), 404, 'not_found');
      expect((await listAll(t.http, '/v1/agents', org.auth)).map((a: any) => a.id)).not.toContain(agent.id);
      // A task can no longer name it.
      expectProblem(
        await createTask(org.auth, { instruction: 'x', agent_type: 'http', agent_id: agent.id }),
        422,
        'agent_not_found',
      );
    });

    it('a viewer can read agents but not create, update or delete them (403)', async () => {
      const agent = await createAgent(org.auth, { name: unique('viewed'), type: 'echo' });
      await t.http.get('/v1/agents').set(viewer.auth).expect(200);
      await t.http.get(`/v1/agents/${agent.id}`).set(viewer.auth).expect(200);
      expectProblem(
        await t.http.post('/v1/agents').set(viewer.auth).send({ name: 'v', type: 'echo' }),
        403,
        'forbidden',
      );
      expectProblem(
        await t.http.patch(`/v1/agents/${agent.id}`).set(viewer.auth).send({ name: 'renamed' }),
        403,
        'forbidden',
      );
      expectProblem(await t.http.delete(`/v1/agents/${agent.id}`).set(viewer.auth), 403, 'forbidden');
      expect((await t.http.get(`/v1/agents/${agent.id}`).set(org.auth).expect(200)).body.name).toBe(
        agent.name,
      );
    });

    it('a developer can manage agents', async () => {
      const developer = await createUser(t.http, org, 'developer');
      const agent = await createAgent(developer.auth, { name: unique('dev'), type: 'echo' });
      await t.http.patch(`/v1/agents/${agent.id}`).set(developer.auth).send({ name: 'dev 2' }).expect(200);
      await t.http.delete(`/v1/agents/${agent.id}`).set(developer.auth).expect(204);
    });

    it('refuses an unknown agent type (400 unknown_agent_type)', async () => {
      const problem = expectProblem(
        await t.http.post('/v1/agents').set(org.auth).send({ name: 'x', type: 'telepathy' }),
        400,
        'unknown_agent_type',
      );
      expect(problem.errors).toEqual([expect.objectContaining({ field: 'type' })]);
    });
  });

  describe('tasks through the echo agent', () => {
    it('queues (202), runs and answers the instruction and a summary of the attachments', async () => {
      const bytes = randomBytes(300);
      const file = await uploadFile(org.auth, bytes, 'input.bin');
      const instruction = unique('Summarise the attached report');
      const res = await createTask(org.auth, { instruction, agent_type: 'echo', attachments: [file.id] });
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({
        id: expect.stringMatching(/^task_[0-9A-Za-z]{22}$/),
        status: 'queued',
        instruction,
        agent_type: 'echo',
        agent_id: null,
        attachments: [file.id],
        created_at: expect.any(String),
      });
      expect(res.body).not.toHaveProperty('result');

      const done = await waitForTask(t.http, org.auth, res.body.id);
      expect(done).toMatchObject({
        id: res.body.id,
        status: 'succeeded',
        attempts: 1,
        result: {
          output: instruction,
          attachments: [{ id: file.id, filename: 'input.bin', size: 300, sha256: sha256(bytes) }],
        },
      });
      expect(done.result.attachments[0]).toEqual({
        id: file.id,
        filename: 'input.bin',
        size: 300,
        sha256: sha256(bytes),
      });
      expect(done).not.toHaveProperty('error');
      const created = Date.parse(done.created_at);
      const started = Date.parse(done.started_at);
      const completed = Date.parse(done.completed_at);
      expect([Number.isNaN(started), Number.isNaN(completed)]).toEqual([false, false]);
      expect(started).toBeGreaterThanOrEqual(created);
      expect(completed).toBeGreaterThanOrEqual(started);
    });

    it('runs a task without attachments', async () => {
      const res = await createTask(org.auth, { instruction: 'just echo', agent_type: 'echo' }).expect(202);
      expect(res.body.attachments).toEqual([]);
      const done = await waitForTask(t.http, org.auth, res.body.id);
      expect(done).toMatchObject({ status: 'succeeded', result: { output: 'just echo', attachments: [] } });
    });

    it('filters the list by status', async () => {
      const res = await createTask(org.auth, { instruction: unique('filtered'), agent_type: 'echo' }).expect(
        202,
      );
      await waitForTask(t.http, org.auth, res.body.id);

      const succeeded = await listAll(t.http, '/v1/tasks?status=succeeded', org.auth);
      expect(succeeded.map((task: any) => task.id)).toContain(res.body.id);
      expect(succeeded.every((task: any) => task.status === 'succeeded')).toBe(true);
      expect(await taskIds(org.auth, '?status=queued')).not.toContain(res.body.id);
      expect(await taskIds(org.auth, '?status=failed')).not.toContain(res.body.id);
      expect(await taskIds(org.auth)).toContain(res.body.id);

      expectProblem(await t.http.get('/v1/tasks?status=done').set(org.auth), 400, 'validation_failed');
    });

    it('a viewer can read tasks but not create or cancel them (403)', async () => {
      const res = await createTask(org.auth, { instruction: unique('read only'), agent_type: 'echo' }).expect(
        202,
      );
      await t.http.get(`/v1/tasks/${res.body.id}`).set(viewer.auth).expect(200);
      expect(await taskIds(viewer.auth)).toContain(res.body.id);
      expectProblem(
        await createTask(viewer.auth, { instruction: 'no', agent_type: 'echo' }),
        403,
        'forbidden',
      );
      expectProblem(await t.http.post(`/v1/tasks/${res.body.id}/cancel`).set(viewer.auth), 403, 'forbidden');
    });
  });

  // The other refusals (agent_required, agent_not_found, attachment_not_found) are tasks.medium-spec.ts's.
  it('refuses a task naming an unknown agent_type: 422 unknown_agent_type with its field, nothing created', async () => {
    const before = await taskIds(org.auth);
    const problem = expectProblem(
      await createTask(org.auth, { instruction: 'x', agent_type: 'telepathy' }),
      422,
      'unknown_agent_type',
    );
    expect(problem.errors).toEqual([expect.objectContaining({ field: 'agent_type' })]);
    expect(await taskIds(org.auth)).toEqual(before);
  });

  describe('tasks through an http agent', () => {
    it('POSTs the task as JSON to the agent and records its JSON answer as the result', async () => {
      const path = `/${unique('ok')}`;
      server.on(path, (req) => ({ status: 200, json: { answer: 42, saw: req.json?.instruction } }));
      const agentId = await httpAgent(org.auth, path);
      const bytes = Buffer.from('attached bytes');
      const file = await uploadFile(org.auth, bytes, 'brief.txt');
      const instruction = unique('Do the thing');

      const res = await createTask(org.auth, {
        instruction,
        agent_type: 'http',
        agent_id: agentId,
        attachments: [file.id],
      }).expect(202);
      expect(res.body).toMatchObject({ status: 'queued', agent_type: 'http', agent_id: agentId });

      const done = await waitForTask(t.http, org.auth, res.body.id);
      expect(done).toMatchObject({
        status: 'succeeded',
        attempts: 1,
        result: { answer: 42, saw: instruction },
      });

      const received = server.requestsTo(path);
      expect(received).toHaveLength(1);
      expect(received[0].method).toBe('POST');
      expect(received[0].headers['content-type']).toMatch(/^application\/json/);
      expect(received[0].json).toEqual({
        task_id: res.body.id,
        instruction,
        attachments: [
          {
            id: file.id,
            filename: 'brief.txt',
            content_type: expect.any(String),
            size: bytes.length,
            sha256: sha256(bytes),
          },
        ],
      });
      // Called with an access token: nothing of the caller's credential is passed on.
      expect(received[0].headers['x-api-key']).toBeUndefined();
      expect(received[0].headers.authorization).toBeUndefined();
      expect(received[0].text).not.toContain(org.token);
    });

    describe("the caller's credential", () => {
      async function runWith(
        auth: Record<string, string>,
      ): Promise<{ headers: Record<string, unknown>; text: string; task: any }> {
        const path = `/${unique('cred')}`;
        server.on(path, () => ({ status: 200, json: { ok: true } }));
        const agentId = await httpAgent(org.auth, path);
        const res = await createTask(auth, {
          instruction: 'call me back',
          agent_type: 'http',
          agent_id: agentId,
        });
        expect(res.status).toBe(202);
        const task = await waitForTask(t.http, org.auth, res.body.id);
        expect(task.status).toBe('succeeded');
        const received = server.requestsTo(path);
        expect(received).toHaveLength(1);
        return {
          headers: received[0].headers,
          text: received[0].text,
          task: { created: res.body, done: task },
        };
      }

      const createKey = async (body: Record<string, unknown>): Promise<string> => {
        const res = await t.http
          .post('/v1/api-keys')
          .set(org.auth)
          .send({ name: unique('task key'), role: 'developer', ...body })
          .expect(201);
        return res.body.key;
      };

      it('hide_credentials false: the agent receives the key in X-API-Key, and nothing in Authorization', async () => {
        const key = await createKey({ hide_credentials: false });
        const { headers, task } = await runWith({ Authorization: `Bearer ${key}` });
        expect(headers['x-api-key']).toBe(key);
        expect(headers.authorization).toBeUndefined();
        // The task record never shows it.
        expect(JSON.stringify(task)).not.toContain(key);
      });

      it('hide_credentials false, key presented in X-API-Key: passed on the same way', async () => {
        const key = await createKey({ hide_credentials: false });
        const { headers } = await runWith({ 'X-API-Key': key });
        expect(headers['x-api-key']).toBe(key);
        expect(headers.authorization).toBeUndefined();
      });

      it('hide_credentials true: the agent receives no X-API-Key and no Authorization, nor the key anywhere', async () => {
        const key = await createKey({ hide_credentials: true });
        const { headers, text, task } = await runWith({ Authorization: `Bearer ${key}` });
        expect(headers['x-api-key']).toBeUndefined();
        expect(headers.authorization).toBeUndefined();
        expect(JSON.stringify(headers)).not.toContain(key);
        expect(text).not.toContain(key);
        expect(JSON.stringify(task)).not.toContain(key);
      });

      it('an access token: the agent receives no credential', async () => {
        const { headers, text } = await runWith(org.auth);
        expect(headers['x-api-key']).toBeUndefined();
        expect(headers.authorization).toBeUndefined();
        expect(JSON.stringify(headers)).not.toContain(org.token);
        expect(text).not.toContain(org.token);
      });
    });

    it('retries a 5xx answer: fails the first time, succeeds the second → succeeded, attempts 2', async () => {
      const path = `/${unique('flaky')}`;
      server.on(path, (_req, count) =>
        count === 1 ? { status: 500, json: { error: 'try again' } } : { status: 200, json: { second: true } },
      );
      const { res, done } = await runOnHttpAgent(path, 'flaky');
      expect(done).toMatchObject({ status: 'succeeded', attempts: 2, result: { second: true } });
      expect(done).not.toHaveProperty('error');
      expect(server.requestsTo(path).map((r) => r.json?.task_id)).toEqual([res.body.id, res.body.id]);
    });

    it('fails for good after TASK_MAX_ATTEMPTS 5xx answers, with error {code, message}', async () => {
      const path = `/${unique('broken')}`;
      server.on(path, () => ({ status: 503, json: { error: 'down' } }));
      const { res, done } = await runOnHttpAgent(path, 'broken');
      expect(done).toMatchObject({
        status: 'failed',
        attempts: 2,
        error: { code: 'agent_error', message: expect.any(String) },
      });
      expect(Object.keys(done.error).sort()).toEqual(['code', 'message']);
      expect(done).not.toHaveProperty('result');
      expect(done.completed_at).toEqual(expect.any(String));
      expect(server.requestsTo(path)).toHaveLength(2);
      expect(await taskIds(org.auth, '?status=failed')).toContain(res.body.id);
    });

    it('fails at once on a 4xx answer, without retrying', async () => {
      const path = `/${unique('rejects')}`;
      server.on(path, () => ({ status: 400, json: { error: 'bad task' } }));
      const { done } = await runOnHttpAgent(path, 'rejected');
      expect(done).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'agent_rejected' } });
      expect(server.requestsTo(path)).toHaveLength(1);
    });

    it('fails on an answer that is not JSON', async () => {
      const path = `/${unique('text')}`;
      server.on(path, () => ({ status: 200, headers: { 'content-type': 'text/plain' } }));
      const { done } = await runOnHttpAgent(path, 'text');
      expect(done).toMatchObject({ status: 'failed', error: { code: 'invalid_agent_response' } });
    });

    it('a redirect answer fails the task without following it', async () => {
      const path = `/${unique('redirect')}`;
      const target = `/${unique('redirect-target')}`;
      server.on(target, () => ({ status: 200, json: { followed: true } }));
      server.on(path, () => ({ status: 302, headers: { location: server.url(target) } }));
      const { done } = await runOnHttpAgent(path, 'redirect');
      expect(done).toMatchObject({
        status: 'failed',
        attempts: 1,
        error: { code: 'redirect_not_followed', message: expect.any(String) },
      });
      expect(server.requestsTo(path)).toHaveLength(1);
      expect(server.requestsTo(target)).toHaveLength(0);
    });
  });

  describe('cancellation', () => {
    /**
     * A task on an http agent whose answer is held until `hold` is released, once the agent has
     * received the call (the task is running).
     */
    async function startHeldTask(label: string) {
      const path = `/${unique(label)}`;
      const hold = heldGate();
      server.on(path, async () => {
        await hold.promise;
        return { status: 200, json: { too: 'late' } };
      });
      const agentId = await httpAgent(org.auth, path);
      const res = await createTask(org.auth, {
        instruction: label,
        agent_type: 'http',
        agent_id: agentId,
      }).expect(202);
      const seen = await waitFor(
        () => server.requestsTo(path),
        (requests) => requests.length > 0,
      );
      expect(seen).toHaveLength(1);
      return { path, hold, res, seen };
    }

    it('cancels a running task; the agent answering afterwards does not overwrite it', async () => {
      const { path, hold, res, seen } = await startHeldTask('slow');
      expect((await t.http.get(`/v1/tasks/${res.body.id}`).set(org.auth).expect(200)).body.status).toBe(
        'running',
      );

      const cancelled = await t.http.post(`/v1/tasks/${res.body.id}/cancel`).set(org.auth).expect(200);
      expect(cancelled.body.status).toBe('cancelled');

      // The agent answers now, before the worker's next heartbeat: the worker gets a success to record.
      hold.release();
      expect(await seen[0].closed).toEqual({ answered: true });

      // It must not record it: the task stays cancelled, without a result.
      const later = await waitFor(
        () => t.http.get(`/v1/tasks/${res.body.id}`).set(org.auth),
        (r: Response) => r.body.status !== 'cancelled',
        { timeoutMs: 2_000, intervalMs: 100 },
      );
      expect(later.body.status).toBe('cancelled');
      expect(later.body).not.toHaveProperty('result');
      expect(later.body.completed_at).toBe(cancelled.body.completed_at);
      expect(server.requestsTo(path)).toHaveLength(1);
      expectProblem(await t.http.post(`/v1/tasks/${res.body.id}/cancel`).set(org.auth), 409, 'task_finished');
    });

    it('cancelling a running task aborts the call to the agent', async () => {
      const { path, hold, res, seen } = await startHeldTask('hanging');
      await t.http.post(`/v1/tasks/${res.body.id}/cancel`).set(org.auth).expect(200);

      // The worker notices at its next heartbeat (a third of the 6 s lease) and drops the connection.
      const outcome = await Promise.race([seen[0].closed, sleep(60_000).then(() => 'still open')]);
      expect(outcome).toEqual({ answered: false });
      hold.release();
      const got = await t.http.get(`/v1/tasks/${res.body.id}`).set(org.auth).expect(200);
      expect(got.body.status).toBe('cancelled');
      expect(server.requestsTo(path)).toHaveLength(1);
    });

    it('cancelling a finished task → 409, and it stays as it was', async () => {
      const res = await createTask(org.auth, { instruction: 'done soon', agent_type: 'echo' }).expect(202);
      const done = await waitForTask(t.http, org.auth, res.body.id);
      expect(done.status).toBe('succeeded');
      expectProblem(await t.http.post(`/v1/tasks/${res.body.id}/cancel`).set(org.auth), 409, 'task_finished');
      const got = await t.http.get(`/v1/tasks/${res.body.id}`).set(org.auth).expect(200);
      expect(got.body).toEqual(done);
    });

    it('an unknown task → 404', async () => {
      expectProblem(
        await t.http.post('/v1/tasks/task_0000000000000000000000/cancel').set(org.auth),
        404,
        'not_found',
      );
      expectProblem(await t.http.get('/v1/tasks/nope').set(org.auth), 404, 'not_found');
    });
  });

  describe('Idempotency-Key', () => {
    it('the same key and body returns the first task (202) and creates only one', async () => {
      const key = unique('idem');
      const body = { instruction: unique('idempotent'), agent_type: 'echo' };
      const first = await createTask(org.auth, body).set('Idempotency-Key', key).expect(202);
      const second = await createTask(org.auth, body).set('Idempotency-Key', key).expect(202);
      expect(second.body.id).toBe(first.body.id);
      await waitForTask(t.http, org.auth, first.body.id);
      const third = await createTask(org.auth, body).set('Idempotency-Key', key).expect(202);
      expect(third.body.id).toBe(first.body.id);

      const all = await listAll(t.http, '/v1/tasks', org.auth);
      expect(all.filter((task: any) => task.instruction === body.instruction)).toHaveLength(1);
    });

    it('a malformed key → 400', async () => {
      const res = await createTask(org.auth, { instruction: 'x', agent_type: 'echo' }).set(
        'Idempotency-Key',
        'x'.repeat(201),
      );
      expectProblem(res, 400, 'invalid_idempotency_key');
    });
  });
});

/*
 * A worker process that dies mid-task: its lease runs out and another instance takes the task up.
 * Two processes on one database need PostgreSQL; PGlite serves a single process.
 */
if (!HAS_POSTGRES) {
  console.warn('agents-tasks: the worker-crash test is skipped; it needs PostgreSQL (set DATABASE_URL).');
}

(HAS_POSTGRES ? describe : describe.skip)('a worker killed mid-task (needs PostgreSQL)', () => {
  it('another instance takes the task up within 10 s of the worker being killed and finishes it (attempts 2), with a new task token, settling its reservation once', async () => {
    const secrets = {
      TOKEN_SIGNING_SECRET: randomBytes(32).toString('hex'),
      API_KEY_HASH_SECRET: randomBytes(32).toString('hex'),
    };
    // The default lease (TASK_LEASE_MS) and poll interval: the 10 s is the contract's, not a test's.
    const workerEnv = {
      WORKER_CONCURRENCY: '1',
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
    };
    const server = await FakeAgentServer.start();
    const databaseUrl = (await createTestDatabase())!;
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-crash-'));
    const port = await freeLoopbackPort();
    const firstAnswer = gate();
    const secondAnswer = gate();
    let child: ChildProcess | undefined;
    let b: TestApp | undefined;
    try {
      const path = '/crash';
      server.on(path, async (_req, count) => {
        if (count === 1) {
          await firstAnswer.promise; // A dies while this request is open
          return { status: 200, json: { from: 'the dead worker' } };
        }
        await secondAnswer.promise; // the test reports usage with this attempt's token meanwhile
        return { status: 200, json: { from: 'the second worker', count } };
      });

      child = spawn(process.execPath, [compiledEntryPoint('main')], {
        cwd: PROJECT_ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          NODE_ENV: 'test',
          PORT: String(port),
          HOST: '127.0.0.1',
          DATA_DIR: dataDir,
          ...instanceDatabaseEnv(databaseUrl),
          ...runRedisEnv(),
          // The namespace test instances of this database use (test-instance.ts): one deployment.
          REDIS_KEY_PREFIX: `${new URL(databaseUrl).pathname.slice(1)}:`,
          LOG_LEVEL: 'warn',
          ALLOW_SIGNUP: 'true',
          BCRYPT_ROUNDS: '4',
          ...secrets,
          ...workerEnv,
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const base = `http://127.0.0.1:${port}`;
      await waitUntilLive(child, base, () => stderr);
      const a = request(base);

      const org = await signUpOrganization(a, 'Crash');
      const agent = await a
        .post('/v1/agents')
        .set(org.auth)
        .send({
          name: 'remote',
          type: 'http',
          config: { url: server.url(path) },
          pricing: { credits_per_1k_input_tokens: 1, credits_per_1k_output_tokens: 0 },
        })
        .expect(201);
      const key = await a
        .post('/v1/api-keys')
        .set(org.auth)
        .send({ name: 'crash', role: 'developer', credits: { remaining: 100, refill: null } })
        .expect(201);
      const keyAuth = { Authorization: `Bearer ${key.body.key}` };
      // 1 credit for the request and 10 reserved for the run.
      const created = await a
        .post('/v1/tasks')
        .set(keyAuth)
        .send({
          instruction: 'survive a crash',
          agent_type: 'http',
          agent_id: agent.body.id,
          max_credits: 10,
        })
        .expect(202);
      const id: string = created.body.id;

      const seen = await waitFor(
        () => server.requestsTo(path),
        (requests) => requests.length > 0,
        { timeoutMs: 60_000 },
      );
      expect(seen).toHaveLength(1);
      const running = await a.get(`/v1/tasks/${id}`).set(org.auth).expect(200);
      expect(running.body).toMatchObject({ status: 'running', attempts: 1 });

      b = await startTestApp({ databaseUrl, env: { ...secrets, ...workerEnv } });
      // A crash: no shutdown hook runs, so nothing hands the task back.
      child.kill('SIGKILL');
      await new Promise((done) =>
        child!.exitCode !== null || child!.signalCode ? done(null) : child!.once('exit', done),
      );
      expect(await seen[0].closed).toEqual({ answered: false });

      // Taken up by B once the dead worker's lease (TASK_LEASE_MS) has run out: waited for, not timed
      // (the lease is configuration; a loaded machine only makes the wait longer).
      const retried = await waitFor(
        () => server.requestsTo(path),
        (requests) => requests.length > 1,
        { timeoutMs: 60_000 },
      );
      expect(retried).toHaveLength(2);
      // The dead attempt's token died with its lease; the new attempt carries a token of its own.
      const [oldToken, newToken] = retried.map((r) => r.headers['x-gatehouse-task-token'] as string);
      expect(newToken).toMatch(/^gtt_/);
      expect(newToken).not.toBe(oldToken);
      expectProblem(
        await b.http.get(`/v1/tasks/${id}`).set({ Authorization: `Bearer ${oldToken}` }),
        401,
        'task_token_expired',
      );
      await b.http
        .post(`/v1/tasks/${id}/events`)
        .set({ Authorization: `Bearer ${newToken}` })
        .send({ type: 'usage', data: { input_tokens: 2500, output_tokens: 0 } })
        .expect(202);
      secondAnswer.release();
      const done = await waitForTask(b.http, org.auth, id, FINAL, 60_000);
      expect(done).toMatchObject({
        status: 'succeeded',
        attempts: 2,
        result: { from: 'the second worker', count: 2 },
      });
      expect(server.requestsTo(path).map((r) => r.json?.task_id)).toEqual([id, id]);
      // Settled once, by the attempt that finished: 100 - 1 (request) - 3 (2,500 tokens at 1 per 1k).
      const balance = await waitFor(
        async () => (await b!.http.get(`/v1/api-keys/${key.body.id}`).set(org.auth)).body.credits.remaining,
        (remaining) => remaining === 96,
        { timeoutMs: 60_000 },
      );
      expect(balance).toBe(96);
      expect(done.usage).toEqual({ input_tokens: 2500, output_tokens: 0, credits: 3 });
    } finally {
      firstAnswer.release();
      secondAnswer.release();
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await b?.close();
      await server.close();
      await dropTestDatabase(databaseUrl);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/** Polls /health/live until the child answers; fails at once if it exits, or after 60 s. */
async function waitUntilLive(child: ChildProcess, base: string, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the instance exited (${child.exitCode ?? child.signalCode}): ${stderr()}`);
    }
    if (Date.now() > deadline) throw new Error(`the instance did not come up: ${stderr()}`);
    const live = await request(base)
      .get('/health/live')
      .timeout(1000)
      .then((res) => res.status === 200)
      .catch(() => false);
    if (live) return;
    await sleep(200);
  }
}
