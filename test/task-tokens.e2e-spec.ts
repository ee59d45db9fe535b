import { createHash } from 'node:crypto';
import { DataSource } from 'typeorm';
import {
  HeldRuns,
  startAppWithHeldRuns,
  startTwoInstancesWithHeldRuns,
  type HeldRun,
} from './support/held-runs';
import { bearer, expectProblem, SignedUpOrganization } from './support/factories';
import { createKey, pollUntil, type Auth } from './support/keys';
import type { TestApp } from './support/test-app';
import { describeWithPostgres, expectWithinOneSecond } from './support/instances';

/**
 * Task tokens, agents' events and output files (contract, "Agent runs"): every run of an http agent
 * carries a `gtt_` token in X-Gatehouse-Task-Token that allows exactly reading its task and the task's
 * files, uploading output files and posting the task's events, never more than the task's creator, and
 * dies with its attempt (401 task_token_expired).
 */

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

describe('task tokens', () => {
  let t: TestApp;
  let runs: HeldRuns;
  let org: SignedUpOrganization;
  let agentId: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ t, runs, org, agentId, close } = await startAppWithHeldRuns());
  });
  afterAll(() => close());

  /** Queues an http task with `auth` and waits until its agent holds it, with its token. */
  const startRun = (auth: Auth, body: Record<string, unknown> = {}): Promise<HeldRun> =>
    runs.begin(t.http, auth, agentId, body);

  function upload(auth: Auth, content: string, filename = 'input.txt') {
    return t.http.post('/v1/files').set(auth).attach('file', Buffer.from(content), filename);
  }

  async function waitUntilEnded(taskId: string) {
    const { value } = await pollUntil(
      () => t.http.get(`/v1/tasks/${taskId}`).set(org.auth),
      (res) => !['queued', 'running'].includes(res.body.status),
    );
    return value.body;
  }

  it('a run carries a gtt_ token whatever hide_credentials says, stored only as a hash', async () => {
    const hiding = await createKey(t.http, org.auth, { role: 'developer', hide_credentials: true });
    const run = await startRun(hiding.auth);
    expect(run.token).toMatch(/^gtt_[0-9A-Za-z]{43}$/);
    expect(run.headers['x-api-key']).toBeUndefined();
    const stored = await t.app
      .get(DataSource)
      .query(`SELECT token_hash FROM task_tokens WHERE task_id = $1`, [run.taskId]);
    expect(stored).toEqual([{ token_hash: sha256(run.token) }]);
    expect(JSON.stringify(await t.app.get(DataSource).query(`SELECT * FROM task_tokens`))).not.toContain(
      run.token,
    );
    run.release();
    await waitUntilEnded(run.taskId);
  });

  it('allows reading its task and its attachments, and nothing else', async () => {
    const attached = await upload(org.auth, 'the brief', 'brief.txt').expect(201);
    const other = await upload(org.auth, 'not for the agent').expect(201);
    const otherTask = await t.http
      .post('/v1/tasks')
      .set(org.auth)
      .send({ instruction: 'other', agent_type: 'echo' })
      .expect(202);
    const run = await startRun(org.auth, { attachments: [attached.body.id] });

    const task = await t.http.get(`/v1/tasks/${run.taskId}`).set(run.tokenAuth).expect(200);
    expect(task.body).toMatchObject({ id: run.taskId, status: 'running' });
    await t.http.get(`/v1/files/${attached.body.id}`).set(run.tokenAuth).expect(200);
    const content = await t.http
      .get(`/v1/files/${attached.body.id}/content`)
      .set(run.tokenAuth)
      .buffer(true)
      .parse((res, done) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => done(null, Buffer.concat(chunks)));
      })
      .expect(200);
    expect((content.body as Buffer).toString()).toBe('the brief');

    const refused = [
      t.http.get(`/v1/files/${other.body.id}`),
      t.http.get(`/v1/files/${other.body.id}/content`),
      t.http.delete(`/v1/files/${attached.body.id}`),
      t.http.get('/v1/files'),
      t.http.get('/v1/tasks'),
      t.http.get(`/v1/tasks/${otherTask.body.id}`),
      t.http.get(`/v1/tasks/${run.taskId}/events`),
      t.http.post(`/v1/tasks/${run.taskId}/cancel`),
      t.http.post('/v1/tasks').send({ instruction: 'more', agent_type: 'echo' }),
      t.http.post(`/v1/tasks/${otherTask.body.id}/events`).send({ type: 'progress', data: {} }),
      t.http.get('/v1/api-keys'),
      t.http.get('/v1/agents'),
      t.http.get('/v1/auth/verify'),
      t.http.get('/v1/usage'),
    ];
    for (const request of refused) expectProblem(await request.set(run.tokenAuth), 403, 'forbidden');
    run.release();
    await waitUntilEnded(run.taskId);
  });

  it('never allows more than the creating key can do at that moment', async () => {
    const role = await t.http
      .post('/v1/roles')
      .set(org.auth)
      .send({ role_name: `runner_${Date.now()}`, permissions: { tasks: ['create', 'read'] } })
      .expect(201);
    const narrow = await createKey(t.http, org.auth, { role: role.body.role_name });
    const attached = await upload(org.auth, 'secret brief').expect(201);
    const run = await startRun(narrow.auth, { attachments: [attached.body.id] });
    // The token reads its task, but not the attachment: its creator may not read files.
    await t.http.get(`/v1/tasks/${run.taskId}`).set(run.tokenAuth).expect(200);
    expectProblem(await t.http.get(`/v1/files/${attached.body.id}`).set(run.tokenAuth), 403, 'forbidden');
    expectProblem(await upload(run.tokenAuth, 'out'), 403, 'forbidden');
    // Disabling the creating key takes the token's rights with it.
    await t.http.patch(`/v1/api-keys/${narrow.id}`).set(org.auth).send({ enabled: false }).expect(200);
    expectProblem(await t.http.get(`/v1/tasks/${run.taskId}`).set(run.tokenAuth), 403, 'forbidden');
    run.release();
    await waitUntilEnded(run.taskId);
  });

  it('posts progress, output and usage events; the task shows the last progress and the usage added up', async () => {
    const run = await startRun(org.auth);
    const post = (body: unknown) =>
      t.http
        .post(`/v1/tasks/${run.taskId}/events`)
        .set(run.tokenAuth)
        .send(body as object);
    const progress = await post({ type: 'progress', data: { message: 'reading', percent: 10 } }).expect(202);
    expect(progress.body).toEqual({ seq: 3, type: 'progress' });
    await post({ type: 'output', data: { delta: 'Hello, ' } }).expect(202);
    await post({ type: 'output', data: { delta: 'world' } }).expect(202);
    await post({ type: 'usage', data: { input_tokens: 1200, output_tokens: 30 } }).expect(202);
    await post({ type: 'usage', data: { input_tokens: 800, output_tokens: 20 } }).expect(202);
    await post({ type: 'progress', data: { message: 'writing', percent: 90 } }).expect(202);

    const running = await t.http.get(`/v1/tasks/${run.taskId}`).set(org.auth).expect(200);
    expect(running.body.progress).toEqual({ message: 'writing', percent: 90 });
    expect(running.body.usage).toEqual({ input_tokens: 2000, output_tokens: 50, credits: 0 });

    run.release();
    const done = await waitUntilEnded(run.taskId);
    expect(done.status).toBe('succeeded');
    const events = await t.http.get(`/v1/tasks/${run.taskId}/events?limit=100`).set(org.auth).expect(200);
    expect(events.body.data.map((e: any) => [e.seq, e.type, e.data])).toEqual([
      [1, 'status', { status: 'queued' }],
      [2, 'status', { status: 'running' }],
      [3, 'progress', { message: 'reading', percent: 10 }],
      [4, 'output', { delta: 'Hello, ' }],
      [5, 'output', { delta: 'world' }],
      [6, 'usage', { input_tokens: 1200, output_tokens: 30 }],
      [7, 'usage', { input_tokens: 800, output_tokens: 20 }],
      [8, 'progress', { message: 'writing', percent: 90 }],
      [9, 'status', { status: 'succeeded' }],
    ]);
  });

  it('refuses malformed events with a 400 naming the field, and writes nothing', async () => {
    const run = await startRun(org.auth);
    const bad: [unknown, string][] = [
      [{ type: 'status', data: { status: 'succeeded' } }, 'type'],
      [{ type: 'progress', data: { percent: 101 } }, 'data.percent'],
      [{ type: 'progress', data: { message: 'x'.repeat(1001) } }, 'data.message'],
      [{ type: 'progress', data: { other: 1 } }, 'data.other'],
      [{ type: 'output', data: {} }, 'data.delta'],
      [{ type: 'output', data: { delta: 'x'.repeat(64 * 1024 + 1) } }, 'data.delta'],
      [{ type: 'usage', data: { input_tokens: -1, output_tokens: 0 } }, 'data.input_tokens'],
      [{ type: 'usage', data: { input_tokens: 1.5, output_tokens: 0 } }, 'data.input_tokens'],
      [{ type: 'usage', data: { input_tokens: 1 } }, 'data.output_tokens'],
      [{ type: 'progress' }, 'data'],
    ];
    for (const [body, field] of bad) {
      const res = await t.http
        .post(`/v1/tasks/${run.taskId}/events`)
        .set(run.tokenAuth)
        .send(body as object);
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    const events = await t.http.get(`/v1/tasks/${run.taskId}/events`).set(org.auth).expect(200);
    expect(events.body.data.map((e: any) => e.type)).toEqual(['status', 'status']);
    run.release();
    await waitUntilEnded(run.taskId);
  });

  it('only a task token posts events: the organization administrator is refused', async () => {
    const run = await startRun(org.auth);
    expectProblem(
      await t.http
        .post(`/v1/tasks/${run.taskId}/events`)
        .set(org.auth)
        .send({ type: 'progress', data: { percent: 1 } }),
      403,
      'forbidden',
    );
    run.release();
    await waitUntilEnded(run.taskId);
  });

  it('keeps at most 10,000 events per task (429 too_many_task_events)', async () => {
    const run = await startRun(org.auth);
    // Posting 9,990 events over HTTP is slow and proves nothing more: the count starts near the cap.
    await t.app.get(DataSource).query(`UPDATE tasks SET event_seq = 9998 WHERE id = $1`, [run.taskId]);
    const post = () =>
      t.http
        .post(`/v1/tasks/${run.taskId}/events`)
        .set(run.tokenAuth)
        .send({ type: 'output', data: { delta: '.' } });
    expect((await post().expect(202)).body.seq).toBe(9999);
    expect((await post().expect(202)).body.seq).toBe(10000);
    expectProblem(await post(), 429, 'too_many_task_events');
    run.release();
    const done = await waitUntilEnded(run.taskId);
    // The terminal status is still recorded after the cap.
    expect(done.status).toBe('succeeded');
  });

  it('uploads output files: listed on the task, streamed as file events, and ordinary files of the organization', async () => {
    const run = await startRun(org.auth);
    const uploaded = await upload(run.tokenAuth, 'the result', 'result.txt').expect(201);
    const file = uploaded.body;
    expect(file).toMatchObject({ filename: 'result.txt', size: 10, sha256: sha256('the result') });
    // The token may read back what it wrote.
    await t.http.get(`/v1/files/${file.id}/content`).set(run.tokenAuth).expect(200);
    const described = { id: file.id, filename: 'result.txt', size: 10, sha256: sha256('the result') };
    const task = await t.http.get(`/v1/tasks/${run.taskId}`).set(org.auth).expect(200);
    expect(task.body.output_files).toEqual([described]);
    run.release();
    await waitUntilEnded(run.taskId);

    const events = await t.http.get(`/v1/tasks/${run.taskId}/events`).set(org.auth).expect(200);
    expect(events.body.data.find((e: any) => e.type === 'file').data).toEqual(described);
    // Listed, read and deleted like any file of the organization; the task then no longer lists it.
    const listed = await t.http.get('/v1/files?limit=100').set(org.auth).expect(200);
    expect(listed.body.data.map((f: any) => f.id)).toContain(file.id);
    await t.http.delete(`/v1/files/${file.id}`).set(org.auth).expect(204);
    const after = await t.http.get(`/v1/tasks/${run.taskId}`).set(org.auth).expect(200);
    expect(after.body.output_files).toEqual([]);
  });

  describe('dies with its attempt', () => {
    const expectExpired = async (token: Auth, taskId: string) =>
      expectProblem(await t.http.get(`/v1/tasks/${taskId}`).set(token), 401, 'task_token_expired');

    it('when the run succeeds', async () => {
      const run = await startRun(org.auth);
      run.release();
      await waitUntilEnded(run.taskId);
      await expectExpired(run.tokenAuth, run.taskId);
      expectProblem(
        await t.http
          .post(`/v1/tasks/${run.taskId}/events`)
          .set(run.tokenAuth)
          .send({ type: 'progress', data: {} }),
        401,
        'task_token_expired',
      );
      expectProblem(await upload(run.tokenAuth, 'late'), 401, 'task_token_expired');
    });

    it('when the task is cancelled', async () => {
      const run = await startRun(org.auth);
      await t.http.post(`/v1/tasks/${run.taskId}/cancel`).set(org.auth).expect(200);
      await expectExpired(run.tokenAuth, run.taskId);
      run.release();
    });

    it('when its lease is lost; the next attempt gets a token of its own', async () => {
      const first = await startRun(org.auth);
      const next = runs.nextStart(first.taskId);
      // The worker stalled past its lease (as if it died): the first token dies at once …
      await t.app
        .get(DataSource)
        .query(`UPDATE tasks SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [
          first.taskId,
        ]);
      await expectExpired(first.tokenAuth, first.taskId);
      // … and when the task is taken up again, its new attempt carries a new token.
      const second = await next;
      expect(second.token).toMatch(/^gtt_/);
      expect(second.token).not.toBe(first.token);
      await t.http.get(`/v1/tasks/${first.taskId}`).set(bearer(second.token)).expect(200);
      await expectExpired(first.tokenAuth, first.taskId);
      first.release();
      await waitUntilEnded(first.taskId);
      await expectExpired(bearer(second.token), first.taskId);
    });

    it('an unknown or malformed gtt_ value is not valid (invalid_credentials)', async () => {
      expectProblem(
        await t.http.get('/v1/tasks').set(bearer(`gtt_${'a'.repeat(43)}`)),
        401,
        'invalid_credentials',
      );
      expectProblem(await t.http.get('/v1/tasks').set(bearer('gtt_short')), 401, 'invalid_credentials');
    });
  });

  it("counts in the creating key's usage and spends none of its credits", async () => {
    const key = await createKey(t.http, org.auth, {
      role: 'developer',
      credits: { remaining: 100, refill: null },
    });
    const run = await startRun(key.auth);
    for (let i = 0; i < 3; i++) await t.http.get(`/v1/tasks/${run.taskId}`).set(run.tokenAuth).expect(200);
    run.release();
    await waitUntilEnded(run.taskId);
    // One credit for the create request, none for the token's three reads.
    const read = await t.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200);
    expect(read.body.credits.remaining).toBe(99);
    const { value: usage } = await pollUntil(
      () => t.http.get(`/v1/api-keys/${key.id}/usage`).set(org.auth),
      (res) => res.body.data?.reduce((n: number, b: any) => n + b.requests, 0) >= 4,
    );
    expect(usage.body.data.reduce((n: number, b: any) => n + b.requests, 0)).toBe(4);
  });
});

describeWithPostgres('task tokens multi-instance e2e')(
  'task tokens on two instances (needs PostgreSQL)',
  () => {
    let a: TestApp;
    let b: TestApp;
    let runs: HeldRuns;
    let org: SignedUpOrganization;
    let agentId: string;
    let close: () => Promise<void>;

    beforeAll(async () => {
      // A runs the task; B has no worker.
      ({ a, b, runs, org, agentId, close } = await startTwoInstancesWithHeldRuns({ a: 2, b: 0 }));
    });
    afterAll(() => close?.());

    it('works on every instance while the run lasts, and is refused on every instance within a second of its end', async () => {
      const run = await runs.begin(a.http, org.auth, agentId);
      await b.http.get(`/v1/tasks/${run.taskId}`).set(run.tokenAuth).expect(200);
      await b.http
        .post(`/v1/tasks/${run.taskId}/events`)
        .set(run.tokenAuth)
        .send({ type: 'progress', data: { percent: 50 } })
        .expect(202);
      await b.http.post(`/v1/tasks/${run.taskId}/cancel`).set(org.auth).expect(200);
      for (const instance of [a, b]) {
        const refused = await expectWithinOneSecond(
          () => instance.http.get(`/v1/tasks/${run.taskId}`).set(run.tokenAuth),
          (res) => res.status === 401,
        );
        expectProblem(refused, 401, 'task_token_expired');
      }
      run.release();
    });
  },
);
