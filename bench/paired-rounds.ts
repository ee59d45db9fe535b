/**
 * What bench:mcp and bench:a2a share: a protocol's face against the REST routes it stands for, measured in
 * paired, interleaved rounds on one Gatehouse (the settings, an organization with a key no limit reaches,
 * the timed loops, the rounds, the server's CPU profile).
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type BenchServer, postJson, startBenchServer } from './bench-child';
import { freshDatabase } from './bench-database';
import { compiledBenchFile, removeCompiledServers } from './compiled-servers';

/** A number from the environment (at least `min`), else `fallback`; exits on anything else. */
export function setting(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    console.error(`${name}=${raw}: expected a number >= 0`);
    process.exit(2);
  }
  return Math.max(min, value);
}

/** No rate limit a run can reach. */
export const UNREACHABLE_LIMITS = { requests_per_minute: 1_000_000, requests_per_hour: 60_000_000 };

export interface Sample {
  /** Requests (operations: a task run, a list) a second. */
  rps: number;
  /** The server's CPU per operation, µs. */
  cpu: number;
  /** This process's (the clients') CPU per operation, µs: it shares the machine with the server. */
  clientCpu: number;
}

/** An organization of its own, and an administrator key of it for both sides. */
export async function organization(
  appUrl: string,
  name: string,
): Promise<{ token: string; key: string; auth: Record<string, string> }> {
  const { access_token: token } = await postJson<{ access_token: string }>(appUrl, '/v1/auth/signup', {
    organization_name: name,
    email: `${name.toLowerCase().replace(/\W+/g, '-')}@example.test`,
    password: 'bench-password',
    name,
  });
  const { key } = await postJson<{ key: string }>(
    appUrl,
    '/v1/api-keys',
    { name: `${name} key`, role: 'administrator', type: 'service', rate_limit: UNREACHABLE_LIMITS },
    token,
  );
  return { token, key, auth: { authorization: `Bearer ${key}` } };
}

/** `workers` loops of `operation` until `seconds` are up; the operations a second and the server's CPU each. */
export async function measure(
  server: BenchServer,
  workers: number,
  seconds: number,
  operation: (worker: number) => Promise<void>,
): Promise<Sample> {
  const cpuBefore = await server.cpu();
  const clientBefore = process.cpuUsage();
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      while (performance.now() < deadline) {
        await operation(worker);
        done++;
      }
    }),
  );
  const elapsed = performance.now() - start;
  const client = process.cpuUsage(clientBefore);
  const cpu = (await server.cpu()) - cpuBefore;
  return { rps: (done * 1000) / elapsed, cpu: cpu / done, clientCpu: (client.user + client.system) / done };
}

/**
 * Warm-up, then `rounds.rounds` rounds of both sides, the first side alternating: throughput on a shared
 * machine drifts from second to second, so each round's ratio is taken between samples of the same round.
 */
export async function phase<S extends string>(
  server: BenchServer,
  workers: number,
  sides: readonly [S, S],
  operations: Record<S, (worker: number) => Promise<void>>,
  rounds: { rounds: number; duration: number; warmup: number },
): Promise<Record<S, Sample[]>> {
  const [first, second] = sides;
  if (rounds.warmup > 0) {
    await measure(server, workers, rounds.warmup, operations[second]);
    await measure(server, workers, rounds.warmup, operations[first]);
  }
  const samples = { [first]: [], [second]: [] } as unknown as Record<S, Sample[]>;
  for (let round = 0; round < rounds.rounds; round++) {
    const order: S[] = round % 2 ? [first, second] : [second, first];
    for (const side of order)
      samples[side].push(await measure(server, workers, rounds.duration, operations[side]));
  }
  return samples;
}

/**
 * A file for `--require` that profiles the process it is loaded into and writes the profile into `dir` as
 * it exits: Node 20 refuses --cpu-prof in NODE_OPTIONS, and the server is forked without arguments.
 */
export function profilerPreload(dir: string, name: string): string {
  const file = join(dir, `${name}-profiler.js`);
  writeFileSync(
    file,
    `const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');
const session = new Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: 500 });
session.post('Profiler.start');
process.on('exit', () => {
  // The in-process session answers synchronously, so the profile is written before the process ends.
  session.post('Profiler.stop', (error, result) => {
    if (!error) writeFileSync(${JSON.stringify(dir)} + '/server-' + process.pid + '.cpuprofile', JSON.stringify(result.profile));
  });
});
`,
  );
  return file;
}

/** One Gatehouse of a protocol's bench, ready: its URL, a GET of JSON, and what to close with it. */
export interface ProtocolBench {
  app: BenchServer;
  appUrl: string;
  getJson<T>(path: string, headers: Record<string, string>): Promise<T>;
  /** Closed before the server stops (the bench's clients, its own servers). */
  closeFirst(close: () => Promise<unknown>): void;
}

/**
 * Runs `body` against one Gatehouse (bench-server.ts, compiled, a process of its own, workers at the
 * default settings, `env` added) on a fresh database of DATABASE_URL's server, then drops it all, also on
 * SIGINT and SIGTERM; the server's log is kept only when the run failed.
 */
export async function withProtocolBench<T>(
  name: string,
  env: Record<string, string>,
  body: (bench: ProtocolBench) => Promise<T>,
): Promise<T> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    console.error(
      `bench:${name} measures on PostgreSQL: set DATABASE_URL to a server (a fresh database is created on it\n` +
        'for the run and dropped afterwards), e.g.\n' +
        `  DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench:${name}`,
    );
    process.exit(2);
  }
  const database = await freshDatabase(serverUrl, `bench_${name}`);
  const dataDir = mkdtempSync(join(tmpdir(), `gatehouse-bench-${name}-`));
  const logDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-log-'));
  const compiled = compiledBenchFile('bench-server.ts');
  // The server names its version from package.json, two folders above src/common: in the build too.
  copyFileSync(join(__dirname, '..', 'package.json'), join(dirname(compiled), '..', 'package.json'));
  const profileDir = process.env.BENCH_CPU_PROFILE_DIR;
  const app = startBenchServer(
    'bench-server.ts',
    compiled,
    {
      ...process.env,
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      BENCH_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
      ...env,
      ...(profileDir ? { NODE_OPTIONS: `--require ${profilerPreload(profileDir, `${name}-bench`)}` } : {}),
    },
    join(logDir, 'gatehouse.log'),
  );
  const closers: (() => Promise<unknown>)[] = [];
  let failed = false;
  let cleaned: Promise<void> | undefined;
  const cleanUp = (): Promise<void> =>
    (cleaned ??= (async () => {
      await Promise.all(closers.map((close) => close().catch(() => undefined)));
      await app.stop();
      removeCompiledServers();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
      if (!failed) rmSync(logDir, { recursive: true, force: true });
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: dropping the bench database`);
      void cleanUp().finally(() => process.exit(130));
    });
  }
  try {
    const { appUrl } = await app.next<{ appUrl: string }>('ready');
    return await body({
      app,
      appUrl,
      async getJson<R>(path: string, headers: Record<string, string>): Promise<R> {
        const response = await fetch(`${appUrl}${path}`, { headers });
        if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`);
        return (await response.json()) as R;
      },
      closeFirst: (close) => void closers.push(close),
    });
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    await cleanUp();
  }
}
