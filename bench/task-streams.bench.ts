/**
 * `npm run bench:streams`: the server-side cost of delivering task events to many open event streams
 * (`GET /v1/tasks/{id}/events`, Server-Sent Events), against a forked bench-server process.
 *
 * For each layout (BENCH_STREAM_LAYOUTS, default `100x10,1000x1`: tasks × streams per task, 1,000 streams
 * either way) the bench queues that many tasks (no workers: they stay queued, so their streams stay open),
 * opens the streams and waits until each got its first event. Then:
 * - idle, BENCH_IDLE_S seconds with the streams open and nothing happening: server CPU and SQL per second;
 * - load, BENCH_DURATION_S seconds of BENCH_EVENTS_PER_S events across the tasks (round robin), written by
 *   the bench straight into task_events with the NOTIFY the API's own event writes send (one statement:
 *   the task's event_seq counted up, the row, pg_notify), each carrying the bench's clock when the
 *   statement was issued. Reported: server CPU per written event and per delivery (process.cpuUsage of the
 *   server), SQL statements the server sent per event (counted in its pg driver), and latency from the
 *   insert being issued to the event's arrival at the client, p50/p99 (goal: p99 < 100 ms). Every stream
 *   is checked to get each of its task's events once, in order.
 *
 * Needs DATABASE_URL (a PostgreSQL server: the bench writes the events from its own connection); the run
 * gets a database of its own there, dropped after, never the one the URL names. Without it, it says so
 * and exits.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { Pool } from 'pg';
import { nextMessage, percentile, signUpForBench, stopChild } from './bench-child';
import { freshDatabase } from './bench-database';

const LAYOUTS = (process.env.BENCH_STREAM_LAYOUTS ?? '100x10,1000x1').split(',').map((layout) => {
  const [tasks, perTask] = layout.split('x').map(Number);
  return { tasks, perTask };
});
const EVENTS_PER_S = Number(process.env.BENCH_EVENTS_PER_S ?? 100);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 20);
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 5);
const OPEN_CONCURRENCY = 50;

interface Counters {
  cpuMicros: number;
  queries: number;
  taskEventQueries: number;
}

/** One open stream: what it received, checked for order as it arrives. */
class Stream {
  lastSeq = 0;
  received = 0;
  outOfOrder = 0;
  private buffer = '';
  private closeRequest?: () => void;

  constructor(private readonly onEvent: (sentAt: number | undefined) => void) {}

  open(url: string, authorization: string, agent: Agent): Promise<void> {
    return new Promise((resolve, reject) => {
      const req = request(url, { agent, headers: { authorization, accept: 'text/event-stream' } }, (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`stream answered ${res.statusCode}`));
          res.resume();
          return;
        }
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => this.take(chunk));
        res.on('error', () => undefined);
        resolve();
      });
      req.on('error', (error) => (this.closeRequest ? undefined : reject(error)));
      this.closeRequest = () => req.destroy();
      req.end();
    });
  }

  close(): void {
    this.closeRequest?.();
  }

  private take(chunk: string): void {
    const now = Date.now();
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      if (block.startsWith(':')) continue;
      const seq = Number(/^id: (\d+)$/m.exec(block)?.[1]);
      if (seq !== this.lastSeq + 1) this.outOfOrder++;
      this.lastSeq = seq;
      this.received++;
      const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as { sent_at?: number } | null;
      this.onEvent(data?.sent_at === undefined ? undefined : now - data.sent_at);
    }
  }
}

async function main(): Promise<void> {
  if (!process.env.DATABASE_URL) {
    console.log('bench:streams needs DATABASE_URL (a PostgreSQL server); skipped.');
    return;
  }
  const database = await freshDatabase(process.env.DATABASE_URL, 'bench_streams');
  const child = fork(join(__dirname, 'bench-server.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: { ...process.env, DATABASE_URL: database.url, WORKER_CONCURRENCY: '0' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit');
  const pool = new Pool({ connectionString: database.url, max: 4 });
  try {
    await run(child, pool);
  } finally {
    await pool.end();
    await stopChild(child, exited, 15_000);
    await database.drop();
  }
}

async function run(child: ReturnType<typeof fork>, pool: Pool): Promise<void> {
  const next = <T>(type: string): Promise<T> => nextMessage<T>(child, type);
  const ask = <T>(command: string): Promise<T> => {
    const answer = next<T>(command);
    child.send({ type: command });
    return answer;
  };
  const counters = async (): Promise<Counters> => {
    const { micros } = await ask<{ micros: number }>('cpu');
    const { total, taskEvents } = await ask<{ total: number; taskEvents: number }>('queries');
    return { cpuMicros: micros, queries: total, taskEventQueries: taskEvents };
  };
  const since = (before: Counters, after: Counters): Counters => ({
    cpuMicros: after.cpuMicros - before.cpuMicros,
    queries: after.queries - before.queries,
    taskEventQueries: after.taskEventQueries - before.taskEventQueries,
  });
  const { appUrl } = await next<{ appUrl: string }>('ready');

  const authorization = `Bearer ${await signUpForBench(appUrl)}`;
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });

  const createTask = async (i: number): Promise<string> => {
    const response = await fetch(`${appUrl}/v1/tasks`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ instruction: `streamed task ${i}`, agent_type: 'echo' }),
    });
    if (response.status !== 202)
      throw new Error(`POST /v1/tasks: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { id: string }).id;
  };
  const inBatches = async <T>(
    count: number,
    width: number,
    make: (i: number) => Promise<T>,
  ): Promise<T[]> => {
    const results: T[] = [];
    for (let start = 0; start < count; start += width) {
      const size = Math.min(width, count - start);
      results.push(...(await Promise.all(Array.from({ length: size }, (_, k) => make(start + k)))));
    }
    return results;
  };

  console.log(
    `\ntask event streams: ${EVENTS_PER_S} events/s for ${DURATION_S} s, idle ${IDLE_S} s, no workers (tasks stay queued)`,
  );
  for (const layout of LAYOUTS) {
    const streamCount = layout.tasks * layout.perTask;
    const taskIds = await inBatches(layout.tasks, 20, createTask);

    let latencies: number[] = [];
    const streams: Stream[][] = taskIds.map(() => []);
    const all: Stream[] = [];
    for (let t = 0; t < taskIds.length; t++) {
      for (let k = 0; k < layout.perTask; k++) {
        const stream = new Stream((latency) => latency !== undefined && latencies.push(latency));
        streams[t].push(stream);
        all.push(stream);
      }
    }
    await inBatches(all.length, OPEN_CONCURRENCY, (i) => {
      const task = Math.floor(i / layout.perTask);
      return all[i].open(`${appUrl}/v1/tasks/${taskIds[task]}/events`, authorization, agent);
    });
    for (let i = 0; i < 200 && all.some((stream) => stream.received < 1); i++) await sleep(50);
    const notStarted = all.filter((stream) => stream.received < 1).length;
    if (notStarted) throw new Error(`${notStarted} of ${streamCount} streams got no first event`);
    await sleep(1000);

    // Idle: the streams open, nothing written.
    const idleStart = await counters();
    await sleep(IDLE_S * 1000);
    const idle = since(idleStart, await counters());

    // Load: EVENTS_PER_S events, round robin over the tasks.
    latencies = [];
    const receivedBefore = all.reduce((sum, stream) => sum + stream.received, 0);
    const total = Math.round(EVENTS_PER_S * DURATION_S);
    const interval = 1000 / EVENTS_PER_S;
    let writeErrors = 0;
    const writes: Promise<unknown>[] = [];
    const loadStart = await counters();
    const startedAt = Date.now();
    for (let i = 0; i < total; i++) {
      const due = startedAt + i * interval;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      const taskId = taskIds[i % taskIds.length];
      writes.push(
        pool
          .query(
            `WITH counted AS (UPDATE tasks SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq),
                  written AS (INSERT INTO task_events (task_id, seq, type, data)
                              SELECT $1, event_seq, 'progress', $2::jsonb FROM counted RETURNING task_id)
             SELECT pg_notify('gatehouse_task_events', task_id) FROM written`,
            [taskId, JSON.stringify({ message: `event ${i}`, sent_at: Date.now() })],
          )
          .catch(() => writeErrors++),
      );
    }
    await Promise.all(writes);
    const writtenMs = Date.now() - startedAt;
    const expected = receivedBefore + total * layout.perTask;
    const received = (): number => all.reduce((sum, stream) => sum + stream.received, 0);
    for (let i = 0; i < 100 && received() < expected; i++) await sleep(50);
    const load = since(loadStart, await counters());
    const loadMs = Date.now() - startedAt;
    const delivered = received() - receivedBefore;
    const outOfOrder = all.reduce((sum, stream) => sum + stream.outOfOrder, 0);

    for (const stream of all) stream.close();
    await sleep(1000);

    const perSecond = (value: number, ms: number): string => ((value * 1000) / ms).toFixed(1);
    const idleCpuMsPerS = idle.cpuMicros / 1000 / IDLE_S;
    const marginalCpu = load.cpuMicros - idleCpuMsPerS * loadMs;
    console.log(
      `\n${layout.tasks} tasks x ${layout.perTask} streams = ${streamCount} streams; ${total} events written in ${writtenMs} ms` +
        (writeErrors ? ` (${writeErrors} writes failed)` : ''),
    );
    console.log(
      `  idle:      server CPU ${idleCpuMsPerS.toFixed(1)} ms/s; SQL ${perSecond(idle.queries, IDLE_S * 1000)}/s (task_events ${perSecond(idle.taskEventQueries, IDLE_S * 1000)}/s)`,
    );
    console.log(
      `  delivered: ${delivered} of ${total * layout.perTask} (${layout.perTask} per event); out of order or repeated: ${outOfOrder}`,
    );
    console.log(
      `  latency:   insert issued -> received p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${Math.max(...latencies)} ms`,
    );
    console.log(
      `  CPU:       ${(load.cpuMicros / 1000).toFixed(0)} ms in ${loadMs} ms -> ${(load.cpuMicros / total).toFixed(0)} µs per event, ${(load.cpuMicros / Math.max(1, delivered)).toFixed(0)} µs per delivery` +
        ` (above idle: ${(marginalCpu / total).toFixed(0)} µs per event)`,
    );
    console.log(
      `  SQL:       ${load.queries} statements -> ${(load.queries / total).toFixed(2)} per event (task_events ${(load.taskEventQueries / total).toFixed(2)} per event)`,
    );
  }
  agent.destroy();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
