/**
 * `npm run bench:tasks`: two measurements against a forked bench-server process.
 *
 * 1. Task throughput end to end through the built-in `echo` agent with two in-process workers
 *    (WORKER_CONCURRENCY=2, WORKER_POLL_MS=20): BENCH_TASKS tasks are created over HTTP with
 *    BENCH_CREATE_CONCURRENCY requests in flight, and the clock runs from the first create until
 *    every one of them reads `succeeded`. Polling stays cheap: after the last create, two one-row
 *    lists (queued, running) per round; only once both are empty are the succeeded pages read.
 * 2. Server memory while a BENCH_UPLOAD_MB MiB file is uploaded to POST /v1/files: the multipart body
 *    is generated as a stream (neither side should hold the file), hashed on the way, and the server
 *    samples its own RSS every 50 ms during the upload. The file is deleted afterwards.
 */
import { fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshDatabase } from './bench-database';

const TASKS = Number(process.env.BENCH_TASKS ?? 300);
const CREATE_CONCURRENCY = Number(process.env.BENCH_CREATE_CONCURRENCY ?? 10);
const WARMUP_TASKS = Number(process.env.BENCH_WARMUP_TASKS ?? 20);
const POLL_MS = 20;
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

const mib = (bytes: number): string => `${(bytes / MIB).toFixed(1)} MiB`;
const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
};

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-tasks-'));
  // On PGlite by default; DATABASE_URL names a PostgreSQL server, on which the run gets a database of its
  // own (dropped after), as bench:verify does: never the one the URL names, whose rows are someone's.
  const database = process.env.DATABASE_URL
    ? await freshDatabase(process.env.DATABASE_URL, 'bench_tasks')
    : undefined;
  const child = fork(join(__dirname, 'bench-server.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: {
      ...process.env,
      DATABASE_URL: database?.url,
      DATA_DIR: dataDir,
      WORKER_CONCURRENCY: '2',
      WORKER_POLL_MS: '20',
      MAX_FILE_SIZE: String(Math.max(600 * MIB, UPLOAD_BYTES + MIB)),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit');
  try {
    await run(child);
  } finally {
    if (child.connected) child.send({ type: 'exit' });
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
    rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  }
}

async function run(child: ReturnType<typeof fork>): Promise<void> {
  const next = <T>(type: string): Promise<T> =>
    new Promise((resolve) => {
      const onMessage = (message: { type: string }): void => {
        if (message.type === type) {
          child.off('message', onMessage);
          resolve(message as T);
        }
      };
      child.on('message', onMessage);
    });
  const ask = <T>(command: string, reply: string): Promise<T> => {
    const answer = next<T>(reply);
    child.send({ type: command });
    return answer;
  };
  const { appUrl } = await next<{ appUrl: string }>('ready');

  const signup = await fetch(`${appUrl}/v1/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      organization_name: 'Bench',
      email: 'bench@example.test',
      password: 'bench-password',
      name: 'Bench',
    }),
  }).then((r) => r.json() as Promise<{ access_token: string }>);
  // A user token: per-key rate limits and concurrency caps do not apply, so they do not shape the figures.
  const auth = { authorization: `Bearer ${signup.access_token}` };

  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${appUrl}${path}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (response.status === 204 ? undefined : await response.json()) as T;
  };

  /** Every task of a status, newest first, following the cursor. */
  const listAll = async (status: string): Promise<TaskView[]> => {
    const all: TaskView[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: TaskView[]; next_cursor: string | null } = await api(
        'GET',
        `/v1/tasks?status=${status}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      all.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    return all;
  };
  const isEmpty = async (status: string): Promise<boolean> =>
    (await api<{ data: unknown[] }>('GET', `/v1/tasks?status=${status}&limit=1`)).data.length === 0;

  /** Creates `count` echo tasks and waits until all have succeeded; timings in ms since the first create. */
  const runTasks = async (
    count: number,
    label: string,
  ): Promise<{ created: number; observed: number; lastCompleted: number; latencies: number[] }> => {
    const start = Date.now();
    const ids = new Set<string>();
    let nextIndex = 0;
    const creator = async (): Promise<void> => {
      while (nextIndex < count) {
        const i = nextIndex++;
        const task = await api<TaskView>('POST', '/v1/tasks', {
          instruction: `${label} task ${i}`,
          agent_type: 'echo',
        });
        ids.add(task.id);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CREATE_CONCURRENCY, count) }, creator));
    const created = Date.now() - start;

    for (;;) {
      if ((await isEmpty('queued')) && (await isEmpty('running'))) {
        const done = (await listAll('succeeded')).filter((task) => ids.has(task.id));
        if (done.length === ids.size) {
          const observed = Date.now() - start;
          const completedAt = done.map((task) => Date.parse(task.completed_at!));
          return {
            created,
            observed,
            lastCompleted: Math.max(...completedAt) - start,
            latencies: done.map((task) => Date.parse(task.completed_at!) - Date.parse(task.created_at)),
          };
        }
        const failed = [...(await listAll('failed')), ...(await listAll('cancelled'))].filter((task) =>
          ids.has(task.id),
        );
        if (failed.length) throw new Error(`${failed.length} ${label} tasks did not succeed`);
      }
      await sleep(POLL_MS);
    }
  };

  // 1. Task throughput.
  await runTasks(WARMUP_TASKS, 'warm-up');
  const tasks = await runTasks(TASKS, 'bench');

  // 2. Peak RSS during a streamed upload.
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

  console.log(`\ntasks through the echo agent (WORKER_CONCURRENCY=2, WORKER_POLL_MS=20)`);
  console.log(
    `  tasks:                     ${TASKS} (after ${WARMUP_TASKS} warm-up), ${CREATE_CONCURRENCY} creates in flight`,
  );
  console.log(
    `  all created (202) after:   ${tasks.created} ms  (${((TASKS * 1000) / tasks.created).toFixed(1)} creates/s)`,
  );
  console.log(
    `  all succeeded, observed:   ${tasks.observed} ms  -> ${((TASKS * 1000) / tasks.observed).toFixed(1)} tasks/s`,
  );
  console.log(
    `  last completed_at:         ${tasks.lastCompleted} ms  -> ${((TASKS * 1000) / tasks.lastCompleted).toFixed(1)} tasks/s`,
  );
  console.log(
    `  created -> completed:      p50 ${percentile(tasks.latencies, 50)} ms, p99 ${percentile(tasks.latencies, 99)} ms, max ${Math.max(...tasks.latencies)} ms`,
  );

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
