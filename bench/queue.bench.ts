/**
 * `npm run bench:queue`: how fast the task queue takes work in and gets it done, on PostgreSQL.
 *
 *   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench:queue
 *
 * Gatehouse (bench-server.ts) runs on a fresh database of that server with BENCH_WORKERS tasks in
 * flight (WORKER_CONCURRENCY). BENCH_TASKS echo tasks are created over HTTP by BENCH_CLIENTS
 * concurrent clients, each with its own API key; two figures:
 *   - creation: tasks answered 202 per second, over HTTP;
 *   - end to end: from the first create until the last task has succeeded (read from the database,
 *     so polling costs the server nothing), tasks per second.
 * Then, like for like with a library: Gatehouse again with the tasks created by BENCH_CLIENTS
 * concurrent TasksService.create calls in its own process (no HTTP, no key check), and the same work
 * through pg-boss (jobs sent by BENCH_CLIENTS concurrent senders, an echo handler fetching batches),
 * each on a fresh database of the same server. Each run is preceded by BENCH_WARMUP_TASKS of the
 * same work.
 */
import autocannon from 'autocannon';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { PgBoss } from 'pg-boss';
import { freshDatabase } from './bench-database';

const TASKS = Number(process.env.BENCH_TASKS ?? 1000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 20);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 16);
const WARMUP_TASKS = Number(process.env.BENCH_WARMUP_TASKS ?? 2000);

async function withDatabase<T>(
  serverUrl: string,
  label: string,
  run: (url: string) => Promise<T>,
): Promise<T> {
  const database = await freshDatabase(serverUrl, `bench_${label}`);
  try {
    return await run(database.url);
  } finally {
    await database.drop();
  }
}

/** Runs `count` calls of `send` with `concurrency` in flight; returns the elapsed milliseconds. */
async function inParallel(
  count: number,
  concurrency: number,
  send: (i: number, lane: number) => Promise<void>,
) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, lane) => {
      for (let i = next++; i < count; i = next++) await send(i, lane);
    }),
  );
  return performance.now() - started;
}

/** Gatehouse, its tasks created over HTTP (`http`) or by TasksService calls in its process (`service`). */
async function gatehouse(
  databaseUrl: string,
  via: 'http' | 'service',
): Promise<{ createPerSecond: number; endToEndPerSecond: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-queue-'));
  const child = fork(join(__dirname, 'bench-server.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      WORKER_CONCURRENCY: String(WORKERS),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const { appUrl } = await new Promise<{ appUrl: string }>((resolve) =>
      child.on(
        'message',
        (message: { type: string; appUrl: string }) => message.type === 'ready' && resolve(message),
      ),
    );
    const post = async <T>(path: string, body: unknown, authorization?: string): Promise<T> => {
      const response = await fetch(`${appUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify(body),
      });
      if (response.status >= 300)
        throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as T;
    };
    const { access_token: token } = await post<{ access_token: string }>('/v1/auth/signup', {
      organization_name: 'Queue bench',
      email: 'queue@example.test',
      password: 'bench-password',
      name: 'Queue',
    });
    const keys: string[] = [];
    for (let lane = 0; lane < CLIENTS; lane++) {
      const { key } = await post<{ key: string }>(
        '/v1/api-keys',
        {
          name: `client ${lane}`,
          role: 'developer',
          type: 'service',
          rate_limit: { requests_per_minute: 1_000_000, requests_per_hour: 60_000_000 },
        },
        `Bearer ${token}`,
      );
      keys.push(`Bearer ${key}`);
    }
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      // autocannon, not fetch, drives the creates: the driver shares the machine's two cores. Each
      // client connection carries its own key.
      // autocannon resolves on its one-second ticker, so the time of the last answer is taken from
      // the clients' own 'response' events.
      let lastAnswerAt = 0;
      const createTasks = (amount: number): Promise<autocannon.Result> => {
        let lane = 0;
        return autocannon({
          url: `${appUrl}/v1/tasks`,
          method: 'POST',
          connections: CLIENTS,
          amount,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ instruction: 'bench', agent_type: 'echo' }),
          setupClient: (client) => {
            client.setHeaders({ 'content-type': 'application/json', authorization: keys[lane++ % CLIENTS] });
            client.on('response', () => (lastAnswerAt = Date.now()));
          },
        });
      };
      /** Creates `count` tasks the way this run measures; when the first began and how long all took. */
      const createAll = async (count: number): Promise<{ started: number; createMs: number }> => {
        if (via === 'http') {
          const started = Date.now();
          const created = await createTasks(count);
          if (created.non2xx || created.errors)
            throw new Error(`creates: ${created.non2xx} non-2xx, ${created.errors} errors`);
          return { started, createMs: lastAnswerAt - started };
        }
        const enqueued = new Promise<{ started: number; finished: number }>((resolve) => {
          const onMessage = (message: { type: string; started: number; finished: number }): void => {
            if (message.type !== 'enqueued') return;
            child.off('message', onMessage);
            resolve(message);
          };
          child.on('message', onMessage);
        });
        child.send({ type: 'enqueue', count, concurrency: CLIENTS });
        const { started, finished } = await enqueued;
        return { started, createMs: finished - started };
      };

      // Warm-up, the same work as measured: JIT, pools, key cache, prepared workers. A short cold
      // run measures V8 warming up, not the queue.
      await createAll(WARMUP_TASKS);
      await waitUntilDone(db, WARMUP_TASKS);
      await db.query('DELETE FROM tasks');

      const { started, createMs } = await createAll(TASKS);
      await waitUntilDone(db, TASKS);
      // When the last task finished, as the database recorded it (same machine, same clock).
      const { rows } = await db.query<{ last: Date }>('SELECT max(completed_at) AS last FROM tasks');
      const endToEndMs = rows[0].last.getTime() - started;
      return { createPerSecond: (TASKS / createMs) * 1000, endToEndPerSecond: (TASKS / endToEndMs) * 1000 };
    } finally {
      await db.end();
    }
  } finally {
    child.send({ type: 'exit' });
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function waitUntilDone(db: Client, expected: number): Promise<void> {
  for (;;) {
    const { rows } = await db.query<{ done: string; failed: string }>(
      `SELECT count(*) FILTER (WHERE status = 'succeeded') AS done,
              count(*) FILTER (WHERE status IN ('failed', 'cancelled')) AS failed FROM tasks`,
    );
    if (Number(rows[0].failed) > 0) throw new Error(`${rows[0].failed} tasks did not succeed`);
    if (Number(rows[0].done) >= expected) return;
    await sleep(5);
  }
}

async function pgBoss(databaseUrl: string): Promise<{ createPerSecond: number; endToEndPerSecond: number }> {
  const boss = new PgBoss({ connectionString: databaseUrl, max: 10 });
  boss.on('error', (error: unknown) => console.error('pg-boss:', error));
  await boss.start();
  try {
    const queue = 'echo';
    await boss.createQueue(queue);
    let done = 0;
    let allDone: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => (allDone = resolve));
    let expected = 0;
    await boss.work<{ instruction: string }>(
      queue,
      { batchSize: WORKERS, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true },
      async (jobs) => {
        done += jobs.length;
        if (expected && done >= expected) allDone();
        return jobs.map((job) => ({ output: job.data.instruction }));
      },
    );
    // Warm-up, as for Gatehouse.
    expected = WARMUP_TASKS;
    await inParallel(
      WARMUP_TASKS,
      CLIENTS,
      async (i) => void (await boss.send(queue, { instruction: `warm ${i}` })),
    );
    await finished.catch(() => undefined);
    while (done < WARMUP_TASKS) await sleep(5);
    done = 0;
    expected = TASKS;
    const measured = new Promise<void>((resolve) => (allDone = resolve));
    const started = performance.now();
    const createMs = await inParallel(TASKS, CLIENTS, async (i) => {
      await boss.send(queue, { instruction: `task ${i}` });
    });
    await measured;
    const endToEndMs = performance.now() - started;
    return { createPerSecond: (TASKS / createMs) * 1000, endToEndPerSecond: (TASKS / endToEndMs) * 1000 };
  } finally {
    await boss.stop({ graceful: false });
  }
}

async function main(): Promise<void> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    console.error('bench:queue measures on PostgreSQL: set DATABASE_URL to a server.');
    process.exit(2);
  }
  const overHttp = await withDatabase(serverUrl, 'queue', (url) => gatehouse(url, 'http'));
  const serviceCalls = await withDatabase(serverUrl, 'queue', (url) => gatehouse(url, 'service'));
  const boss = await withDatabase(serverUrl, 'pgboss', pgBoss);
  console.log(
    `\n${TASKS} echo tasks, ${CLIENTS} concurrent clients, ${WORKERS} in flight per worker process, PostgreSQL`,
  );
  console.log('queue'.padEnd(34), 'created/s'.padStart(10), 'done/s (end to end)'.padStart(20));
  const row = (label: string, figures: { createPerSecond: number; endToEndPerSecond: number }): void =>
    console.log(
      label.padEnd(34),
      figures.createPerSecond.toFixed(0).padStart(10),
      figures.endToEndPerSecond.toFixed(0).padStart(20),
    );
  row('Gatehouse (HTTP, key check)', overHttp);
  row('Gatehouse (service calls, no HTTP)', serviceCalls);
  row('pg-boss (library calls, no HTTP)', boss);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
