/**
 * `npm run bench:llm`: `llm` agents (src/llm-agents) against a Chat Completions upstream served by this
 * process on loopback, through a forked bench-server process (API and worker in one, as bench:tasks runs
 * them) at default settings; only ALLOW_PRIVATE_NETWORK_TARGETS=true, so the loopback upstream can be
 * reached. The organization's secret is made with POST /v1/secrets, the agent with POST /v1/agents.
 *
 * 1. Streaming overhead: BENCH_LLM_STREAM_RUNS runs, one at a time, each answered by BENCH_LLM_DELTAS
 *    deltas of DELTA_CHARS characters written as fast as the socket takes them, the task's events read
 *    by a client through GET /v1/tasks/{id}/events (Server-Sent Events). The runner joins deltas arriving
 *    within 50 ms into one `output` event, so events are not deltas: the rate is measured in content,
 *    characters of delta text (every delta has the same length, so characters / DELTA_CHARS are
 *    delta-equivalents). Upstream rate: the characters it sent / the time from its first delta written
 *    to its last one taken by the socket. Client rate: the same characters / the time from the
 *    upstream's first delta written to the client's receipt of the last of them (end to end, so the join
 *    window and the event's way through PostgreSQL count against it). Goal: client / upstream ≥ 0.5.
 *    Each run's received text is checked to equal what was sent, in order. Server CPU (process.cpuUsage
 *    of the server process) over the runs is reported per delta.
 *    Beside it, the decoding alone of one such answer (1,000 chunks in one body, in memory): the openai
 *    SDK's own stream decoder against readServerSentEvents (src/llm-agents/server-sent-events.ts), the
 *    measurement behind the runner's reading streams itself.
 * 2. BENCH_LLM_CONCURRENT_RUNS runs (default 200) kept in flight against an upstream that answers each
 *    request after BENCH_LLM_ANSWER_MS (default 2000): each of 200 clients (API keys, five to a key,
 *    connections kept alive) creates a run, waits for its
 *    end (GET /v1/tasks/{id}?wait) and creates the next, for BENCH_LLM_SUSTAINED_S seconds (default 30: the runs end in waves, and a window of a few waves counts one more or one fewer of them)
 *    after one round of warm-up; runs/s are the runs that ended in that window over its length (at most
 *    200 / 2 s = 100 runs/s; goal ≥ 90). Every run is checked to have succeeded with the upstream's text.
 * 3. The same number of runs created at once, from an idle instance: runs/s from the first create until
 *    none is queued or running, a burst's figure, which counts creating and finishing all of them on one
 *    process against a single 2 s wait (BENCH_LLM_BURST=0 leaves it out).
 *
 * Needs DATABASE_URL (a PostgreSQL server); the run gets a database of its own there, dropped after.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import {
  Agent,
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Stream } from 'openai/streaming';
import { readServerSentEvents } from '../src/llm-agents/server-sent-events';
import { jsonApi, median, nextMessage, percentile, signUpForBench, stopChild } from './bench-child';
import { freshDatabase } from './bench-database';

const STREAM_RUNS = Number(process.env.BENCH_LLM_STREAM_RUNS ?? 5);
const DELTAS = Number(process.env.BENCH_LLM_DELTAS ?? 1000);
const CONCURRENT_RUNS = Number(process.env.BENCH_LLM_CONCURRENT_RUNS ?? 200);
const ANSWER_MS = Number(process.env.BENCH_LLM_ANSWER_MS ?? 2000);
const SUSTAINED_S = Number(process.env.BENCH_LLM_SUSTAINED_S ?? 30);
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 20);
/** The sustained runs' clients that share one API key (see keyClients). */
const CLIENTS_PER_KEY = 5;
/** Where the server writes a V8 CPU profile of the whole run, when set (open it in Chrome's DevTools). */
const CPU_PROFILE_DIR = process.env.BENCH_CPU_PROFILE_DIR;
/** Every delta is this long (`d0000042 ` and so on), so characters received count deltas. */
const DELTA_CHARS = 9;
const fmt = (n: number): string => n.toFixed(0);
const deltaText = (i: number): string => `d${String(i).padStart(7, '0')} `;

/** What the upstream did for one streamed answer, by the task's instruction (the user message). */
interface Sent {
  firstWrite: number;
  lastTaken: number;
  chars: number;
  text: string;
}

/**
 * A Chat Completions server: model `stream` answers DELTAS deltas as fast as the socket takes them (the
 * write of the next one waits only for `drain`), model `slow` waits ANSWER_MS and then answers a short
 * text. Both end with the usage chunk and `[DONE]`, as OpenAI's API does with include_usage.
 */
class BenchUpstream {
  readonly sent = new Map<string, Sent>();
  open = 0;
  peakOpen = 0;
  /** When each request arrived and when its answer ended (ms since the epoch), for the timeline. */
  arrivals: number[] = [];
  /** The same, by the request's user message (a run's instruction). */
  arrivalOf = new Map<string, number>();
  answerOf = new Map<string, number>();
  answered: number[] = [];
  private server?: Server;

  async listen(): Promise<string> {
    this.server = createServer((req, res) => void this.answer(req, res));
    this.server.keepAliveTimeout = 60_000;
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.arrivals.push(Date.now());
    this.open++;
    this.peakOpen = Math.max(this.peakOpen, this.open);
    res.on('close', () => this.open--);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      model: string;
      messages: { role: string; content: string }[];
    };
    const user = body.messages.find((message) => message.role === 'user')?.content ?? '';
    this.arrivalOf.set(user, this.arrivals[this.arrivals.length - 1]);
    if (body.model === 'slow') await sleep(ANSWER_MS);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const chunk = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`;
    const base = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: body.model };
    const write = async (text: string): Promise<void> => {
      if (!res.write(text)) await once(res, 'drain');
    };
    const count = body.model === 'stream' ? DELTAS : 3;
    const record: Sent = { firstWrite: 0, lastTaken: 0, chars: 0, text: '' };
    await write(chunk({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] }));
    record.firstWrite = performance.timeOrigin + performance.now();
    for (let i = 0; i < count; i++) {
      const text = deltaText(i);
      record.text += text;
      record.chars += text.length;
      await write(chunk({ ...base, choices: [{ index: 0, delta: { content: text }, finish_reason: null }] }));
    }
    // The last delta taken by the socket (its write callback), not merely queued.
    await new Promise<void>((resolve) => res.write('', () => resolve()));
    record.lastTaken = performance.timeOrigin + performance.now();
    await write(chunk({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }));
    await write(
      chunk({
        ...base,
        choices: [],
        usage: { prompt_tokens: 10, completion_tokens: count, total_tokens: 10 + count },
      }),
    );
    res.end('data: [DONE]\n\n');
    this.answered.push(Date.now());
    this.answerOf.set(user, Date.now());
    this.sent.set(user, record);
  }
}

/** One SSE client of a task: the output text it got, when each output event arrived, and the end. */
function readEvents(
  url: string,
  authorization: string,
  agent: Agent,
): Promise<{ text: string; outputEvents: number; arrivals: { at: number; chars: number }[] }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers: { authorization, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET events: ${res.statusCode}`));
        return;
      }
      let buffer = '';
      let text = '';
      let outputEvents = 0;
      const arrivals: { at: number; chars: number }[] = [];
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const at = performance.timeOrigin + performance.now();
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!block.startsWith('id:')) continue;
          const type = /^event: (.*)$/m.exec(block)?.[1];
          if (type !== 'output') continue;
          const { delta } = JSON.parse(/^data: (.*)$/m.exec(block)![1]) as { delta: string };
          text += delta;
          outputEvents++;
          arrivals.push({ at, chars: delta.length });
        }
      });
      // The stream ends after the terminal status event.
      res.on('end', () => resolve({ text, outputEvents, arrivals }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function main(): Promise<void> {
  if (!process.env.DATABASE_URL) {
    console.log('bench:llm needs DATABASE_URL (a PostgreSQL server); skipped.');
    return;
  }
  const upstream = new BenchUpstream();
  const baseUrl = await upstream.listen();
  const database = await freshDatabase(process.env.DATABASE_URL, 'bench_llm');
  const child = fork(join(__dirname, 'bench-server.ts'), [], {
    execArgv: [
      '-r',
      'ts-node/register/transpile-only',
      ...(CPU_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROFILE_DIR}`] : []),
    ],
    env: { ...process.env, DATABASE_URL: database.url, ALLOW_PRIVATE_NETWORK_TARGETS: 'true' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit');
  try {
    await run(child, upstream, baseUrl);
  } finally {
    await stopChild(child, exited, 15_000);
    await upstream.close();
    await database.drop();
  }
}

async function run(child: ReturnType<typeof fork>, upstream: BenchUpstream, baseUrl: string): Promise<void> {
  const next = <T>(type: string): Promise<T> => nextMessage<T>(child, type);
  const cpu = async (): Promise<number> => {
    const answer = next<{ micros: number }>('cpu');
    child.send({ type: 'cpu' });
    return (await answer).micros;
  };
  /** SQL statements the server sent so far (counted at its pg driver by bench-server.ts). */
  const queries = async (): Promise<number> => {
    const answer = next<{ total: number }>('queries');
    child.send({ type: 'queries' });
    return (await answer).total;
  };
  const { appUrl } = await next<{ appUrl: string }>('ready');
  const authorization = `Bearer ${await signUpForBench(appUrl)}`;
  // Not kept alive: with hundreds of sockets idle between phases, reusing one the server is closing
  // (its keep-alive timeout) ends a request with ECONNRESET.
  const connections = new Agent({ keepAlive: false, maxSockets: Infinity });
  const api = jsonApi(appUrl, { authorization }, connections);

  const secret = await api<{ id: string }>('POST', '/v1/secrets', {
    name: 'bench-upstream',
    value: 'sk-bench-not-checked-by-the-upstream',
  });
  const makeAgent = (name: string, model: string): Promise<{ id: string }> =>
    api('POST', '/v1/agents', {
      name,
      type: 'llm',
      config: { provider: 'openai', model, secret_id: secret.id, base_url: baseUrl },
    });
  const streamAgent = await makeAgent('Bench streaming model', 'stream');
  const slowAgent = await makeAgent('Bench slow model', 'slow');
  const createTask = (agentId: string, instruction: string, as: typeof api = api): Promise<{ id: string }> =>
    as('POST', '/v1/tasks', { instruction, agent_type: 'llm', agent_id: agentId });
  const isEmpty = async (status: string): Promise<boolean> =>
    (await api<{ data: unknown[] }>('GET', `/v1/tasks?status=${status}&limit=1`)).data.length === 0;

  console.log(`\nllm agents (Chat Completions upstream on loopback, default worker settings)`);
  console.log(
    `  load average at start: ${loadavg()
      .map((n) => n.toFixed(2))
      .join(', ')} (2 cores, shared)`,
  );

  // 1. Streaming overhead. One warm-up run first (the SDK's and the outbound client's first use).
  const streamRun = async (instruction: string) => {
    const task = await createTask(streamAgent.id, instruction);
    const received = await readEvents(`${appUrl}/v1/tasks/${task.id}/events`, authorization, connections);
    const sent = upstream.sent.get(instruction);
    if (!sent) throw new Error(`the upstream saw no request for ${instruction}`);
    if (received.text !== sent.text) {
      throw new Error(
        `${instruction}: got ${received.text.length} of ${sent.text.length} characters, or not in order`,
      );
    }
    const lastArrival = received.arrivals[received.arrivals.length - 1].at;
    return {
      upstreamMs: sent.lastTaken - sent.firstWrite,
      endToEndMs: lastArrival - sent.firstWrite,
      clientSpanMs: lastArrival - received.arrivals[0].at,
      firstLatencyMs: received.arrivals[0].at - sent.firstWrite,
      chars: sent.chars,
      events: received.outputEvents,
    };
  };
  if (STREAM_RUNS > 0) await streamOverhead();
  if (STREAM_RUNS > 0) await decoding();
  if (SUSTAINED_S > 0) await sustainedRuns();
  if (process.env.BENCH_LLM_BURST !== '0') await burstOfRuns();
  connections.destroy();

  /** Decoding one answer of DELTAS chunks, held in memory: the SDK's decoder and the runner's. */
  async function decoding(): Promise<void> {
    const base = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 0, model: 'stream' };
    const text = Array.from(
      { length: DELTAS },
      (_, i) =>
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: deltaText(i) }, finish_reason: null }] })}\n\n`,
    ).join('');
    const bytes = new TextEncoder().encode(`${text}data: [DONE]\n\n`);
    // Socket-sized pieces, as a body arrives.
    const body = (): ReadableStream<Uint8Array> => {
      let offset = 0;
      return new ReadableStream({
        pull(controller) {
          if (offset >= bytes.length) return controller.close();
          controller.enqueue(bytes.slice(offset, (offset += 16 * 1024)));
        },
      });
    };
    const time = async (decode: () => Promise<number>): Promise<number> => {
      const times: number[] = [];
      for (let i = 0; i < 21; i++) {
        const start = performance.now();
        if ((await decode()) !== DELTAS) throw new Error('a decoder lost chunks');
        times.push(performance.now() - start);
      }
      return median(times);
    };
    const sdk = await time(async () => {
      let deltas = 0;
      const stream = Stream.fromSSEResponse<{ choices: { delta: { content?: string } }[] }>(
        new Response(body()),
        new AbortController(),
      );
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) deltas++;
      return deltas;
    });
    const ours = await time(async () => {
      let deltas = 0;
      await readServerSentEvents(body(), (_event, data) => {
        if (data.startsWith('[DONE]')) return;
        const chunk = JSON.parse(data) as { choices: { delta: { content?: string } }[] };
        if (chunk.choices[0]?.delta.content) deltas++;
      });
      return deltas;
    });
    console.log(
      `  decoding alone:   one answer of ${DELTAS} chunks in memory, median of 21: the openai SDK's stream ${sdk.toFixed(1)} ms, ` +
        `readServerSentEvents (the runner's) ${ours.toFixed(1)} ms (${(sdk / ours).toFixed(1)}x)`,
    );
  }

  async function streamOverhead(): Promise<void> {
    await streamRun('warm-up stream');
    const cpuBefore = await cpu();
    const runs = [];
    for (let i = 0; i < STREAM_RUNS; i++) runs.push(await streamRun(`stream ${i}`));
    const streamCpu = (await cpu()) - cpuBefore;
    const rate = (chars: number, ms: number): number => (chars * 1000) / Math.max(ms, 0.001);
    const upstreamRates = runs.map((r) => rate(r.chars, r.upstreamMs));
    const clientRates = runs.map((r) => rate(r.chars, r.endToEndMs));
    const ratios = runs.map((r) => r.upstreamMs / r.endToEndMs);
    console.log(
      `\n1. streaming: ${STREAM_RUNS} runs one at a time, ${DELTAS} deltas of ${DELTA_CHARS} characters each (after 1 warm-up)`,
    );
    console.log(
      `  upstream sent:    median ${fmt(median(upstreamRates))} chars/s = ${fmt(median(upstreamRates) / DELTA_CHARS)} deltas/s ` +
        `(${fmt(median(runs.map((r) => r.upstreamMs)))} ms first to last delta; runs ${upstreamRates.map((x) => fmt(x / DELTA_CHARS)).join(', ')} deltas/s)`,
    );
    console.log(
      `  client received:  median ${fmt(median(clientRates))} chars/s = ${fmt(median(clientRates) / DELTA_CHARS)} delta-equivalents/s ` +
        `(upstream's first delta -> client's last, ${fmt(median(runs.map((r) => r.endToEndMs)))} ms; runs ${clientRates.map((x) => fmt(x / DELTA_CHARS)).join(', ')})`,
    );
    console.log(
      `  output events:    median ${median(runs.map((r) => r.events))} per run = ${fmt(median(runs.map((r) => rate(r.events, r.endToEndMs))))} events/s ` +
        `(${fmt(median(runs.map((r) => DELTAS / r.events)))} deltas per event); first output after ${fmt(median(runs.map((r) => r.firstLatencyMs)))} ms, ` +
        `client's first to last ${fmt(median(runs.map((r) => r.clientSpanMs)))} ms`,
    );
    console.log(
      `  client / upstream: median ${median(ratios).toFixed(2)} (runs ${ratios.map((x) => x.toFixed(2)).join(', ')}; goal >= 0.5)`,
    );
    console.log(
      `  server CPU:       ${fmt(streamCpu / 1000)} ms for ${STREAM_RUNS * DELTAS} deltas -> ${fmt(streamCpu / (STREAM_RUNS * DELTAS))} µs per delta ` +
        `(API and worker, one process; create, run, events, SSE included)`,
    );
  }

  /**
   * The clients of the sustained runs hold API keys, as a platform's clients do (an access token is for
   * managing keys), CLIENTS_PER_KEY to a key at the default limits: MAX_CONCURRENT_REQUESTS_PER_KEY (20)
   * and DEFAULT_REQUESTS_PER_MINUTE (600) hold each key's requests under them. They keep their
   * connections alive, which is safe in this phase: no socket of a client that loops sits idle long
   * enough for the server's keep-alive timeout.
   */
  async function keyClients(count: number): Promise<{ apis: (typeof api)[]; close: () => void }> {
    const keys = await Promise.all(
      Array.from({ length: Math.ceil(count / CLIENTS_PER_KEY) }, (_, i) =>
        api<{ key: string }>('POST', '/v1/api-keys', { name: `bench client ${i}`, role: 'developer' }),
      ),
    );
    const kept = new Agent({ keepAlive: true, maxSockets: Infinity });
    return {
      apis: Array.from({ length: count }, (_, slot) =>
        jsonApi(appUrl, { authorization: `Bearer ${keys[Math.floor(slot / CLIENTS_PER_KEY)].key}` }, kept),
      ),
      close: () => kept.destroy(),
    };
  }

  // 2. CONCURRENT_RUNS runs kept in flight against an upstream that answers after ANSWER_MS.
  async function sustainedRuns(): Promise<void> {
    const clients = await keyClients(CONCURRENT_RUNS);
    const warmUpMs = ANSWER_MS * 1.5;
    const start = Date.now();
    const windowStart = start + warmUpMs;
    const windowEnd = windowStart + SUSTAINED_S * 1000;
    const ended: number[] = [];
    /** Per run in the window: the medians of its phases (see below) and its attempts. */
    const trace: number[][] = [];
    const latencies: number[] = [];
    let failed = 0;
    upstream.peakOpen = 0;
    const cpuBefore = await cpu();
    const queriesBefore = await queries();
    let cpuInWindow = 0;
    let queriesInWindow = 0;
    const windowCounters = (async () => {
      await sleep(windowStart - Date.now());
      const [c, q] = [await cpu(), await queries()];
      await sleep(windowEnd - Date.now());
      cpuInWindow = (await cpu()) - c;
      queriesInWindow = (await queries()) - q;
    })();
    let runs = 0;
    /**
     * Each run created in the window: its time from the create to the client's next create (to its end,
     * for a client's last run). Every run created in the window counts, however long it took, so long
     * runs are not left out for ending after the window (Little's law, below).
     */
    const cycles: number[] = [];
    const client = async (slot: number): Promise<void> => {
      let previous: number | undefined;
      let lastEnd = 0;
      while (Date.now() < windowEnd) {
        const created = Date.now();
        if (previous !== undefined && previous >= windowStart) cycles.push(created - previous);
        previous = created;
        const run = runs++;
        const asClient = clients.apis[slot];
        const task = await createTask(slowAgent.id, `sustained ${slot} ${run}`, asClient);
        let state: {
          status: string;
          result: { output: string } | null;
          attempts: number;
          created_at: string;
          started_at: string;
          completed_at: string;
        };
        do {
          state = await asClient('GET', `/v1/tasks/${task.id}?wait=30`);
        } while (state.status === 'queued' || state.status === 'running');
        const at = Date.now();
        if (state.status !== 'succeeded' || state.result?.output !== 'd0000000 d0000001 d0000002 ') failed++;
        if (at >= windowStart && at < windowEnd) {
          // Where a run's time went: the server's timestamps and the upstream's, in order.
          const instruction = `sustained ${slot} ${run}`;
          const [createdAt, startedAt, completedAt] = [
            state.created_at,
            state.started_at,
            state.completed_at,
          ].map(Date.parse);
          const arrived = upstream.arrivalOf.get(instruction) ?? NaN;
          const answered = upstream.answerOf.get(instruction) ?? NaN;
          trace.push([
            createdAt - created,
            startedAt - createdAt,
            arrived - startedAt,
            answered - arrived,
            completedAt - answered,
            at - completedAt,
            state.attempts,
          ]);
          ended.push(at);
          latencies.push(at - created);
        }
        lastEnd = at;
      }
      if (previous !== undefined && previous >= windowStart) cycles.push(lastEnd - previous);
    };
    await Promise.all(Array.from({ length: CONCURRENT_RUNS }, (_, slot) => client(slot)));
    clients.close();
    await windowCounters;
    const totalCpu = (await cpu()) - cpuBefore;
    const totalQueries = (await queries()) - queriesBefore;
    const rate = ended.length / SUSTAINED_S;
    const phase = (i: number): string =>
      `${fmt(median(trace.map((t) => t[i])))} (p99 ${fmt(
        percentile(
          trace.map((t) => t[i]),
          99,
        ),
      )})`;
    const retried = trace.filter((t) => t[6] > 1).length;
    console.log(
      `\n2. ${CONCURRENT_RUNS} runs kept in flight for ${SUSTAINED_S} s (after ${(warmUpMs / 1000).toFixed(1)} s of warm-up), upstream answering after ${ANSWER_MS} ms`,
    );
    const meanCycle = cycles.reduce((x, y) => x + y, 0) / Math.max(1, cycles.length);
    console.log(
      `  runs/s:           ${((CONCURRENT_RUNS * 1000) / meanCycle).toFixed(1)} (${CONCURRENT_RUNS} runs in flight / their mean cycle, create to the client's next create, ${fmt(meanCycle)} ms over ${cycles.length} cycles; ` +
        `at most ${((CONCURRENT_RUNS * 1000) / ANSWER_MS).toFixed(0)} runs/s; goal >= 90)`,
    );
    console.log(
      `  runs ended:       ${rate.toFixed(1)} runs/s counted in the window (${ended.length}; the runs end in waves of up to ${CONCURRENT_RUNS}, so a count moves with where the window's ends fall between them)`,
    );
    console.log(
      `  create -> end:    p50 ${percentile(latencies, 50)} ms, p90 ${percentile(latencies, 90)} ms, p99 ${percentile(latencies, 99)} ms, mean ${fmt(latencies.reduce((x, y) => x + y, 0) / Math.max(1, latencies.length))} ms (the upstream's ${ANSWER_MS} ms included; seen by the client)`,
    );
    console.log(
      `  a run's time:     medians (p99): request -> created ${phase(0)} ms, created -> started ${phase(1)} ms, started -> upstream request ${phase(2)} ms, ` +
        `upstream ${phase(3)} ms, its answer -> completed ${phase(4)} ms, completed -> the client's answer ${phase(5)} ms; ${retried} runs took more than one attempt`,
    );
    console.log(
      `  server:           CPU ${fmt(cpuInWindow / Math.max(1, ended.length))} µs and ${(queriesInWindow / Math.max(1, ended.length)).toFixed(1)} SQL statements per run in the window ` +
        `(${fmt(cpuInWindow / 1000 / SUSTAINED_S / 10)}% of a core); ${runs} runs, ${fmt(totalCpu / 1000)} ms CPU, ${totalQueries} statements in all; ` +
        `at most ${upstream.peakOpen} upstream requests open at once`,
    );
    if (failed)
      throw new Error(`${failed} of ${runs} sustained runs did not succeed with the upstream's text`);
  }

  // 3. A burst of runs against an upstream that answers after ANSWER_MS.
  async function burstOfRuns(): Promise<void> {
    // One warm-up round, untimed: the first runs of a process pay for its first connections and compiles.
    await Promise.all(
      Array.from({ length: CONCURRENT_RUNS }, (_, i) => createTask(slowAgent.id, `slow warm-up ${i}`)),
    );
    while (!((await isEmpty('queued')) && (await isEmpty('running')))) await sleep(POLL_MS);
    upstream.peakOpen = 0;
    upstream.arrivals = [];
    upstream.answered = [];
    const concurrentCpuBefore = await cpu();
    const queriesBefore = await queries();
    const start = Date.now();
    const ids = await Promise.all(
      Array.from({ length: CONCURRENT_RUNS }, (_, i) =>
        createTask(slowAgent.id, `slow ${i}`).then((t) => t.id),
      ),
    );
    const created = Date.now() - start;
    while (!((await isEmpty('queued')) && (await isEmpty('running')))) await sleep(POLL_MS);
    const observed = Date.now() - start;
    const concurrentCpu = (await cpu()) - concurrentCpuBefore;
    const concurrentQueries = (await queries()) - queriesBefore;
    const tasks = await Promise.all(
      ids.map((id) =>
        api<{
          status: string;
          result: { output: string } | null;
          attempts: number;
          created_at: string;
          completed_at: string;
        }>('GET', `/v1/tasks/${id}`),
      ),
    );
    const failed = tasks.filter(
      (t) => t.status !== 'succeeded' || t.result?.output !== 'd0000000 d0000001 d0000002 ',
    );
    const latencies = tasks.map((t) => Date.parse(t.completed_at) - Date.parse(t.created_at));
    const retried = tasks.filter((t) => t.attempts > 1).length;
    const lastCompleted = Math.max(...tasks.map((t) => Date.parse(t.completed_at))) - start;
    console.log(
      `\n3. ${CONCURRENT_RUNS} runs created at once, upstream answering after ${ANSWER_MS} ms (after 1 warm-up round)`,
    );
    console.log(
      `  end to end:       ${((CONCURRENT_RUNS * 1000) / observed).toFixed(1)} runs/s observed (${observed} ms), ` +
        `${((CONCURRENT_RUNS * 1000) / lastCompleted).toFixed(1)} runs/s by completed_at (${lastCompleted} ms); a burst, no goal`,
    );
    console.log(
      `  all created:      ${created} ms; created -> completed p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${Math.max(...latencies)} ms; ` +
        `${retried} runs took more than one attempt`,
    );
    console.log(
      `  upstream:         at most ${upstream.peakOpen} requests open at once; server CPU ${fmt(concurrentCpu / 1000)} ms (${fmt(concurrentCpu / CONCURRENT_RUNS)} µs per run); ` +
        `${(concurrentQueries / CONCURRENT_RUNS).toFixed(1)} SQL statements per run (polling included)`,
    );
    const since = (times: number[], p: number): number => percentile(times, p) - start;
    console.log(
      `  timeline:         upstream requests arrived ${since(upstream.arrivals, 0)}..${since(upstream.arrivals, 50)}..${since(upstream.arrivals, 100)} ms ` +
        `(first, median, last), answers ended ${since(upstream.answered, 0)}..${since(upstream.answered, 50)}..${since(upstream.answered, 100)} ms after the first create`,
    );
    console.log(
      `  load average at end: ${loadavg()
        .map((n) => n.toFixed(2))
        .join(', ')}`,
    );
    if (failed.length)
      throw new Error(`${failed.length} of ${CONCURRENT_RUNS} runs did not succeed with the upstream's text`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
