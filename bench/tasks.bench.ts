/**
 * `npm run bench:tasks`: three measurements against a forked bench-server process at default settings
 * (WORKER_CONCURRENCY, WORKER_POLL_MS and the pool as a deployment has them; only
 * ALLOW_PRIVATE_NETWORK_TARGETS=true, so the loopback agent below can be reached).
 *
 * 1. Tasks end to end through the built-in `echo` agent: BENCH_TASKS tasks created over HTTP by
 *    BENCH_CLIENTS clients, the clock running from the first create until none of them is queued or
 *    running (two one-row lists per BENCH_POLL_MS; then every one of them is checked to have
 *    succeeded, untimed). BENCH_WARMUP_TASKS of the same go first, once.
 * 2. The same through an `http` agent on loopback (bench/slow-agent.ts, a process of its own) that answers
 *    each task after BENCH_AGENT_DELAY_MS: I/O-bound runs, as real agents are, so the figure is how many
 *    runs the worker keeps in flight. BENCH_HTTP_TASKS per round after BENCH_HTTP_WARMUP_TASKS, and the
 *    server's peak RSS and the most requests the agent had open at once are reported.
 *    Each round of 1 and 2 also reads one task's events: queued, running, succeeded (the triggers that
 *    write an event for every status change are part of what is measured). BENCH_ROUNDS rounds of 1
 *    and 2, interleaved; medians are reported.
 *    With BENCH_CPU_PROFILE_DIR set, the server writes a CPU profile of the whole run there.
 * 3. Server memory while a BENCH_UPLOAD_MB MiB file is uploaded to POST /v1/files: the multipart body
 *    is generated as a stream (neither side should hold the file), hashed on the way, and the server
 *    samples its own RSS every 50 ms during the upload. The file is deleted afterwards.
 */
import { fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jsonApi, nextMessage, percentile, signUpForBench, stopChild } from './bench-child';
import { freshDatabase } from './bench-database';

const TASKS = Number(process.env.BENCH_TASKS ?? 3000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 20);
const WARMUP_TASKS = Number(process.env.BENCH_WARMUP_TASKS ?? 1000);
const HTTP_TASKS = Number(process.env.BENCH_HTTP_TASKS ?? 3000);
const HTTP_WARMUP_TASKS = Number(process.env.BENCH_HTTP_WARMUP_TASKS ?? 500);
const AGENT_DELAY_MS = Number(process.env.BENCH_AGENT_DELAY_MS ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 20);
const CPU_PROFILE_DIR = process.env.BENCH_CPU_PROFILE_DIR;
const UPLOAD_MB = Number(process.env.BENCH_UPLOAD_MB ?? 500);
const MIB = 1024 * 1024;
const UPLOAD_BYTES = UPLOAD_MB * MIB;
const CHUNK_BYTES = MIB;
const BOUNDARY = '----GatehouseBenchBoundary7d3f9a1c2b4e6f80';

interface TaskView {
  id: string;
  status: string;
  created_at: string;
  completed_at: string | null;
}

interface FileView {
  id: string;
  size: number;
  sha256: string;
}

interface Round {
  /** The server process's CPU time over the round, as a share of one core (2 cores here: at most 200%). */
  serverCpu: number;
  /** SQL statements the server sent over the round (its pg driver's count), polling included. */
  queries: number;
  created: number;
  observed: number;
  lastCompleted: number;
  latencies: number[];
}

const mib = (bytes: number): string => `${(bytes / MIB).toFixed(1)} MiB`;
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const perSecond = (count: number, ms: number): number => (count * 1000) / ms;

/** bench/slow-agent.ts in a process of its own: its URL, the most requests it held open at once, and its end. */
async function startSlowAgent(): Promise<{
  url: string;
  peakOpen: () => Promise<number>;
  close: () => Promise<void>;
}> {
  const child = fork(join(__dirname, 'slow-agent.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: { ...process.env, BENCH_AGENT_DELAY_MS: String(AGENT_DELAY_MS) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit');
  const { url } = await nextMessage<{ url: string }>(child, 'ready');
  return {
    url,
    peakOpen: async () => {
      const answer = nextMessage<{ peak: number }>(child, 'peak');
      child.send({ type: 'peak' });
      return (await answer).peak;
    },
    close: () => stopChild(child, exited, 5_000),
  };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-tasks-'));
  // On PGlite by default; DATABASE_URL names a PostgreSQL server, on which the run gets a database of its
  // own (dropped after), as bench:verify does: never the one the URL names, whose rows are someone's.
  const database = process.env.DATABASE_URL
    ? await freshDatabase(process.env.DATABASE_URL, 'bench_tasks')
    : undefined;
  const agent = await startSlowAgent();
  const child = fork(join(__dirname, 'bench-server.ts'), [], {
    execArgv: [
      '-r',
      'ts-node/register/transpile-only',
      // Where the time goes: a V8 CPU profile of the server (open it in Chrome's DevTools).
      ...(CPU_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROFILE_DIR}`] : []),
    ],
    env: {
      ...process.env,
      ...(database?.env ?? { DATABASE_URL: undefined }),
      DATA_DIR: dataDir,
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      MAX_FILE_SIZE: String(Math.max(600 * MIB, UPLOAD_BYTES + MIB)),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit');
  try {
    await run(child, agent);
  } finally {
    await stopChild(child, exited, 15_000);
    await agent.close();
    rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  }
}

async function run(
  child: ReturnType<typeof fork>,
  agent: Awaited<ReturnType<typeof startSlowAgent>>,
): Promise<void> {
  const next = <T>(type: string): Promise<T> => nextMessage<T>(child, type);
  const ask = <T>(command: string, reply: string): Promise<T> => {
    const answer = next<T>(reply);
    child.send({ type: command });
    return answer;
  };
  const { appUrl } = await next<{ appUrl: string }>('ready');

  const auth = { authorization: `Bearer ${await signUpForBench(appUrl)}` };

  // node:http with kept-alive connections, one per client: the bench shares the machine with the server,
  // and fetch costs the client several times the CPU per request.
  const connections = new Agent({ keepAlive: true, maxSockets: CLIENTS + 2 });
  const api = jsonApi(appUrl, auth, connections);

  /** Tasks of a status, newest first, following the cursor until `enough` holds of what was read. */
  const listUntil = async (status: string, enough: (all: TaskView[]) => boolean): Promise<TaskView[]> => {
    const all: TaskView[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: TaskView[]; next_cursor: string | null } = await api(
        'GET',
        `/v1/tasks?status=${status}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      all.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor && !enough(all));
    return all;
  };
  const isEmpty = async (status: string): Promise<boolean> =>
    (await api<{ data: unknown[] }>('GET', `/v1/tasks?status=${status}&limit=1`)).data.length === 0;

  const slowAgent = await api<{ id: string }>('POST', '/v1/agents', {
    name: 'Slow bench agent',
    type: 'http',
    config: { url: agent.url },
  });

  /**
   * Creates `count` tasks with BENCH_CLIENTS creates in flight and waits until none is queued or running
   * (timed), then checks that every one succeeded and that one has its status events (untimed).
   */
  const runTasks = async (count: number, label: string, body: Record<string, unknown>): Promise<Round> => {
    const cpuBefore = (await ask<{ micros: number }>('cpu', 'cpu')).micros;
    const queriesBefore = (await ask<{ total: number }>('queries', 'queries')).total;
    const start = Date.now();
    const ids = new Set<string>();
    let nextIndex = 0;
    const creator = async (): Promise<void> => {
      while (nextIndex < count) {
        const i = nextIndex++;
        const task = await api<TaskView>('POST', '/v1/tasks', { instruction: `${label} task ${i}`, ...body });
        ids.add(task.id);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CLIENTS, count) }, creator));
    const created = Date.now() - start;
    while (!((await isEmpty('queued')) && (await isEmpty('running')))) await sleep(POLL_MS);
    const observed = Date.now() - start;
    const serverCpu = ((await ask<{ micros: number }>('cpu', 'cpu')).micros - cpuBefore) / 1000 / observed;
    const queries = (await ask<{ total: number }>('queries', 'queries')).total - queriesBefore;

    // Newest first: this round's tasks are the first pages.
    const done = (
      await listUntil('succeeded', (all) => all.filter((task) => ids.has(task.id)).length === ids.size)
    ).filter((task) => ids.has(task.id));
    if (done.length !== ids.size) throw new Error(`${ids.size - done.length} ${label} tasks did not succeed`);
    const sample = done[Math.floor(Math.random() * done.length)];
    const events = await api<{ data: { type: string; data: { status?: string } }[] }>(
      'GET',
      `/v1/tasks/${sample.id}/events`,
    );
    const statuses = events.data.filter((e) => e.type === 'status').map((e) => e.data.status);
    if (statuses.join() !== 'queued,running,succeeded')
      throw new Error(`task ${sample.id} has status events ${statuses.join()}`);
    const completedAt = done.map((task) => Date.parse(task.completed_at!));
    return {
      serverCpu,
      queries,
      created,
      observed,
      lastCompleted: Math.max(...completedAt) - start,
      latencies: done.map((task) => Date.parse(task.completed_at!) - Date.parse(task.created_at)),
    };
  };

  const echo = { agent_type: 'echo' };
  const http = { agent_type: 'http', agent_id: slowAgent.id };
  await runTasks(WARMUP_TASKS, 'echo warm-up', echo);
  await runTasks(HTTP_WARMUP_TASKS, 'http warm-up', http);
  await agent.peakOpen();
  const echoRounds: Round[] = [];
  const httpRounds: (Round & { peakRss: number; peakOpen: number })[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    echoRounds.push(await runTasks(TASKS, `echo round ${round}`, echo));
    await ask('rss-start', 'rss-started');
    const httpRound = await runTasks(HTTP_TASKS, `http round ${round}`, http);
    const { peak } = await ask<{ peak: number }>('rss-stop', 'rss-stopped');
    httpRounds.push({ ...httpRound, peakRss: peak, peakOpen: await agent.peakOpen() });
  }

  const report = (title: string, count: number, rounds: Round[]): void => {
    console.log(`\n${title}`);
    console.log(
      `  tasks:                     ${count} per round, ${CLIENTS} clients creating, ${rounds.length} rounds`,
    );
    const figures = (pick: (round: Round) => number): string =>
      `median ${median(rounds.map((round) => perSecond(count, pick(round)))).toFixed(1)}/s  (rounds ${rounds
        .map((round) => perSecond(count, pick(round)).toFixed(0))
        .join(', ')})`;
    console.log(`  all created (202):         ${figures((round) => round.created)}`);
    console.log(`  end to end, observed:      ${figures((round) => round.observed)}`);
    console.log(`  end to end, completed_at:  ${figures((round) => round.lastCompleted)}`);
    const cpuPerTask = median(rounds.map((round) => (round.serverCpu * round.observed * 1000) / count));
    console.log(
      `  server CPU:                median ${(median(rounds.map((round) => round.serverCpu)) * 100).toFixed(0)}% of a core, ${cpuPerTask.toFixed(0)} µs per task (create, run, outcome, polling)`,
    );
    console.log(
      `  SQL statements:            median ${median(rounds.map((round) => round.queries / count)).toFixed(2)} per task (the server's pg driver, polling included)`,
    );
    const latencies = rounds.flatMap((round) => round.latencies);
    console.log(
      `  created -> completed:      p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${Math.max(...latencies)} ms`,
    );
  };
  const pooled = process.env.BENCH_POOLER_URL ? '; PostgreSQL through a transaction pooler' : '';
  console.log(`\ntasks end to end, default worker settings, events written for every status change${pooled}`);
  report(`echo agent (after ${WARMUP_TASKS} warm-up)`, TASKS, echoRounds);
  report(
    `http agent on loopback answering after ${AGENT_DELAY_MS} ms (after ${HTTP_WARMUP_TASKS} warm-up)`,
    HTTP_TASKS,
    httpRounds,
  );
  console.log(
    `  agent requests open at once: max ${Math.max(...httpRounds.map((round) => round.peakOpen))}; server RSS peak ${mib(Math.max(...httpRounds.map((round) => round.peakRss)))}`,
  );

  // 3. Peak RSS during a streamed upload.
  await sleep(500);
  const baseline = await ask<NodeJS.MemoryUsage>('memory', 'memory');
  await ask('rss-start', 'rss-started');
  const uploadStart = Date.now();
  const upload = await streamUpload(`${appUrl}/v1/files`, auth.authorization);
  const uploadMs = Date.now() - uploadStart;
  const sampled = await ask<{ peak: number; samples: number; kernelPeak?: number }>(
    'rss-stop',
    'rss-stopped',
  );
  const after = await ask<NodeJS.MemoryUsage>('memory', 'memory');

  const problems: string[] = [];
  if (upload.status !== 201) problems.push(`status ${upload.status}: ${upload.body.slice(0, 500)}`);
  const file = upload.status === 201 ? (JSON.parse(upload.body) as FileView) : undefined;
  if (file && file.size !== UPLOAD_BYTES) problems.push(`size ${file.size}, expected ${UPLOAD_BYTES}`);
  if (file && file.sha256 !== upload.sha256)
    problems.push(`sha256 ${file.sha256}, expected ${upload.sha256}`);
  if (file) await api('DELETE', `/v1/files/${file.id}`);
  connections.destroy();

  console.log(`\nupload of ${UPLOAD_MB} MiB (${UPLOAD_BYTES} bytes) to POST /v1/files, streamed`);
  console.log(`  server RSS baseline:       ${mib(baseline.rss)}`);
  console.log(`  server RSS peak (sampled): ${mib(sampled.peak)}  (${sampled.samples} samples, every 50 ms)`);
  console.log(`  peak - baseline:           ${mib(sampled.peak - baseline.rss)}`);
  if (sampled.kernelPeak !== undefined) {
    console.log(
      `  kernel VmHWM during upload: ${mib(sampled.kernelPeak)}  (${mib(sampled.kernelPeak - baseline.rss)} over baseline)`,
    );
  }
  console.log(`  server RSS after:          ${mib(after.rss)}`);
  console.log(
    `  time:                      ${uploadMs} ms  -> ${(UPLOAD_BYTES / MIB / (uploadMs / 1000)).toFixed(1)} MB/s (1 MB = 1 MiB)`,
  );
  console.log(
    `  response:                  ${upload.status}${file ? `, size ${file.size}, sha256 ${file.sha256}` : ''}`,
  );
  console.log(`  bench sha256:              ${upload.sha256}`);
  if (problems.length) throw new Error(`upload check failed: ${problems.join('; ')}`);
  console.log(`  check:                     ok (201, size and sha256 match; file deleted)`);
}

/**
 * POSTs a multipart/form-data body with one `file` part of UPLOAD_BYTES pseudo-random bytes, written
 * in CHUNK_BYTES chunks with backpressure and hashed as it goes. Only one chunk is held at a time.
 */
async function streamUpload(
  url: string,
  authorization: string,
): Promise<{ status: number; body: string; sha256: string }> {
  const head = Buffer.from(
    `--${BOUNDARY}\r\n` +
      'Content-Disposition: form-data; name="file"; filename="bench.bin"\r\n' +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const seed = randomBytes(CHUNK_BYTES);
  const hash = createHash('sha256');

  const req = request(url, {
    method: 'POST',
    headers: {
      authorization,
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      'content-length': String(head.length + UPLOAD_BYTES + tail.length),
    },
  });
  let answered = false;
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  // Keep the rejection handled while writing; it is awaited below.
  response.catch(() => undefined);

  const write = async (chunk: Buffer): Promise<void> => {
    if (!req.write(chunk)) await Promise.race([once(req, 'drain'), response]);
  };
  await write(head);
  for (let offset = 0, index = 0; offset < UPLOAD_BYTES && !answered; offset += CHUNK_BYTES, index++) {
    // A fresh buffer each time (the previous one may still be queued in the socket), distinct per chunk.
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, UPLOAD_BYTES - offset));
    seed.copy(chunk, 0, 0, chunk.length);
    chunk.writeUInt32BE(index, 0);
    hash.update(chunk);
    await write(chunk);
  }
  if (!answered) req.end(tail);
  const { status, body } = await response;
  return { status, body, sha256: hash.digest('hex') };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
