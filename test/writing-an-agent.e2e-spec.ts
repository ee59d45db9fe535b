import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { CapturedChild, exited, spawnCaptured } from './support/child-process';
import { signUpOrganization, SignedUpOrganization } from './support/factories';
import { createKey, CreatedKey, pollUntil } from './support/keys';
import { freeLoopbackPort } from './support/ports';
import { startTestApp, TestApp } from './support/test-app';

/**
 * docs/writing-an-agent.md runs as printed: the agent it prints is examples/agent/summarize-agent.mjs byte
 * for byte, and that file, started with `node` as a child process, serves as an http agent of a listening
 * app: it reads its attachment with the task token, posts progress, output and usage events, uploads its
 * summary as an output file and answers with the result. The page's commands (the agent started beside a
 * server that allows loopback targets, registered and given a task) run in test/docs-guides.e2e-spec.ts.
 */

const PROJECT_ROOT = resolve(__dirname, '..');
const AGENT_FILE = 'examples/agent/summarize-agent.mjs';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The guide that prints the agent. */
function agentSection(): string {
  return readFileSync(join(PROJECT_ROOT, 'docs', 'writing-an-agent.md'), 'utf8');
}

interface StreamedEvent {
  id: string;
  event: string;
  data: unknown;
}

/** Reads a task's Server-Sent Events from the start until the stream ends (after the terminal status). */
async function streamEvents(baseUrl: string, taskId: string, auth: Record<string, string>) {
  const response = await fetch(`${baseUrl}/v1/tasks/${taskId}/events`, {
    headers: { ...auth, accept: 'text/event-stream' },
    signal: AbortSignal.timeout(60_000),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '' && !block.startsWith(':'))
    .map((block): StreamedEvent => {
      const field = (name: string) => block.match(new RegExp(`^${name}: (.*)$`, 'm'))?.[1] ?? '';
      return { id: field('id'), event: field('event'), data: JSON.parse(field('data')) };
    });
}

/** Waits until `url` answers at all (the agent answers a GET with 404). */
async function waitUntilServing(child: CapturedChild, url: string): Promise<void> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the agent exited before serving:\n${child.output().stderr}`);
    }
    const up = await fetch(url, { signal: AbortSignal.timeout(2000) })
      .then(() => true)
      .catch(() => false);
    if (up) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the agent did not serve within 30 s:\n${child.output().stderr}`);
}

describe('docs/writing-an-agent.md', () => {
  let t: TestApp;
  let baseUrl: string;
  let org: SignedUpOrganization;
  let key: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp({
      env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true', WORKER_CONCURRENCY: '2', WORKER_POLL_MS: '50' },
    });
    const server = t.app.getHttpServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    org = await signUpOrganization(t.http);
    key = await createKey(t.http, org.auth, { name: 'Summariser', role: 'developer', type: 'service' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('prints examples/agent/summarize-agent.mjs verbatim in a ```js block', () => {
    const source = readFileSync(join(PROJECT_ROOT, AGENT_FILE), 'utf8');
    expect(source.length).toBeGreaterThan(500);
    expect(agentSection()).toContain('```js\n' + source + '```\n');
  });

  it('the printed agent runs a task: events in order, an output file, usage and the result', async () => {
    const agentPort = await freeLoopbackPort();
    const agent = spawnCaptured(process.execPath, [AGENT_FILE], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH, PORT: String(agentPort), GATEHOUSE_URL: baseUrl },
    });
    try {
      await waitUntilServing(agent, `http://127.0.0.1:${agentPort}/`);
      const registered = await t.http
        .post('/v1/agents')
        .set(key.auth)
        .send({ name: 'Summarizer', type: 'http', config: { url: `http://127.0.0.1:${agentPort}/` } })
        .expect(201);
      const notes =
        'Gatehouse runs agents.\n\nThis file has three lines\nand fifteen words, counted by the agent.\n';
      const attachment = await t.http
        .post('/v1/files')
        .set(key.auth)
        .attach('file', Buffer.from(notes), 'notes.txt')
        .expect(201);
      const created = await t.http
        .post('/v1/tasks')
        .set(key.auth)
        .send({
          instruction: 'Summarise this',
          agent_type: 'http',
          agent_id: registered.body.id,
          attachments: [attachment.body.id],
        })
        .expect(202);
      const taskId = created.body.id as string;

      const { value: ended } = await pollUntil(
        () => t.http.get(`/v1/tasks/${taskId}`).set(key.auth),
        (res) => !['queued', 'running'].includes(res.body.status),
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      if (ended.body.status !== 'succeeded') {
        throw new Error(`task ${JSON.stringify(ended.body)}\nagent stderr:\n${agent.output().stderr}`);
      }
      const streamed = await streamEvents(baseUrl, taskId, key.auth);
      const summary = 'notes.txt: 3 lines, 15 words';
      const written = `Summarise this\n\n${summary}\n`;

      const task = (await t.http.get(`/v1/tasks/${taskId}`).set(key.auth).expect(200)).body;
      expect({ status: task.status, error: task.error }).toEqual({ status: 'succeeded', error: undefined });
      expect(task.result).toEqual({ summary, result_file_id: expect.stringMatching(/^file_/) });
      const resultFile = { id: task.result.result_file_id, filename: 'summary.txt' };
      const described = { ...resultFile, size: Buffer.byteLength(written), sha256: sha256(written) };
      expect(task.output_files).toEqual([described]);
      expect(task.progress).toEqual({ message: 'uploading the summary', percent: 90 });
      expect(task.usage).toMatchObject({ input_tokens: 15, output_tokens: 5 });

      const content = await fetch(`${baseUrl}/v1/files/${resultFile.id}/content`, { headers: key.auth });
      expect(content.status).toBe(200);
      expect(await content.text()).toBe(written);

      const expected = [
        ['status', { status: 'queued' }],
        ['status', { status: 'running' }],
        ['progress', { message: 'reading the attachment', percent: 10 }],
        ['progress', { message: 'summarising', percent: 50 }],
        ['output', { delta: 'notes.txt: ' }],
        ['output', { delta: '3 lines, ' }],
        ['output', { delta: '15 words' }],
        ['usage', { input_tokens: 15, output_tokens: 5 }],
        ['progress', { message: 'uploading the summary', percent: 90 }],
        ['file', described],
        ['status', { status: 'succeeded' }],
      ];
      expect(streamed.map((e) => [e.event, e.data])).toEqual(expected);
      expect(streamed.map((e) => e.id)).toEqual(expected.map((_, i) => String(i + 1)));
      const listed = await t.http.get(`/v1/tasks/${taskId}/events?limit=100`).set(key.auth).expect(200);
      expect(listed.body.data.map((e: any) => [e.type, e.data])).toEqual(expected);
    } finally {
      if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGTERM');
      await exited(agent, 10_000);
    }
  });
});
