/**
 * `npm run bench:ab`: a change's cost to the key check, measured against another checkout in the same run.
 *
 *   git worktree add ../gatehouse-base <commit>   # or any checkout; it needs node_modules (a symlink will do)
 *   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres [REDIS_URL=redis://127.0.0.1:6379] \
 *     BENCH_BASE=../gatehouse-base npm run bench:ab
 *
 * Two Gatehouse processes, each compiled from its own tree (the base's bench/bench-server.ts and this
 * one's), on one fresh database (and one Redis when REDIS_URL is set) with one data directory, so a key
 * made through either works on both. Each round measures, for each process in turn (the order alternates),
 * GET /v1/auth/verify with one service key (limits of 1,000,000 a minute) and GET /bench/same-body (a public
 * route answering verify's body): CPU µs a request of the process that served, and requests a second. The
 * key check is verify minus same-body in the same round; the figure that matters is the per-round
 * difference between the two processes, which the machine's drift from one round to the next mostly
 * cancels. bench:verify gives the absolute figures; this tells whether a change moved them.
 *
 * Settings: BENCH_BASE (required), BENCH_ROUNDS (7, at least 5), BENCH_DURATION (seconds per measurement,
 * 3), BENCH_CONNECTIONS (50).
 */
import autocannon from 'autocannon';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  assertClean,
  type BenchServer,
  median,
  postJson,
  signUpForBench,
  startBenchServer,
} from './bench-child';
import { freshDatabase } from './bench-database';
import { compiledBenchFile, removeCompiledServers } from './compiled-servers';

const ROUNDS = Math.max(5, Number(process.env.BENCH_ROUNDS ?? 7));
const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

type Side = 'base' | 'this';

/** The base checkout's own compiled-servers module: it compiles that tree, not this one. */
function baseCompiler(base: string): Promise<typeof import('./compiled-servers')> {
  return import(join(base, 'bench', 'compiled-servers'));
}

async function main(): Promise<void> {
  const serverUrl = process.env.DATABASE_URL;
  const baseDir = process.env.BENCH_BASE && resolve(process.env.BENCH_BASE);
  if (!serverUrl || !baseDir) {
    console.error(
      'bench:ab needs DATABASE_URL (a PostgreSQL server) and BENCH_BASE (the checkout to compare with)',
    );
    process.exit(2);
  }
  const base = await baseCompiler(baseDir);
  const database = await freshDatabase(serverUrl, 'bench');
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-ab-'));
  const env = { ...process.env, DATABASE_URL: database.url, DATA_DIR: dataDir, BENCH_LOG_LEVEL: 'info' };
  const servers: Partial<Record<Side, { server: BenchServer; url: string }>> = {};
  /** One side's Gatehouse, ready; its request lines go to a file beside the data. */
  const startSide = async (side: Side, compiledFile: string) => {
    const server = startBenchServer(
      `${side} bench-server.ts`,
      compiledFile,
      env,
      join(dataDir, `${side}.log`),
    );
    servers[side] = { server, url: '' };
    servers[side].url = (await server.next<{ appUrl: string }>('ready')).appUrl;
    return servers[side];
  };
  try {
    // One after the other: the first runs the migrations.
    const first = await startSide('base', base.compiledBenchFile('bench-server.ts'));
    const second = await startSide('this', compiledBenchFile('bench-server.ts'));
    const key = await serviceKey(first.url);
    const authorization = `Bearer ${key}`;
    const body = await (await fetch(`${first.url}/v1/auth/verify`, { headers: { authorization } })).text();
    for (const { server } of [first, second]) {
      const set = server.next('same-body-set');
      server.child.send({ type: 'same-body', body });
      await set;
    }

    const measure = async (side: Side, path: string, headers: Record<string, string>, seconds: number) => {
      const { server, url } = servers[side]!;
      const before = await server.cpu();
      const result = await autocannon({
        url: `${url}${path}`,
        headers,
        connections: CONNECTIONS,
        duration: seconds,
      });
      const cpu = (await server.cpu()) - before;
      assertClean(`${side} ${path}`, result);
      return { rps: result.requests.average, cpu: cpu / result.requests.total };
    };
    const sides: Side[] = ['base', 'this'];
    for (const side of sides) {
      await measure(side, '/v1/auth/verify', { authorization }, 2);
      await measure(side, '/bench/same-body', {}, 2);
    }

    const figures: Record<string, Record<Side, number[]>> = {};
    const record = (name: string, side: Side, value: number): void => {
      (figures[name] ??= { base: [], this: [] })[side].push(value);
    };
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of round % 2 ? [...sides].reverse() : sides) {
        const verify = await measure(side, '/v1/auth/verify', { authorization }, DURATION);
        const same = await measure(side, '/bench/same-body', {}, DURATION);
        record('verify, CPU µs/request', side, verify.cpu);
        record('same body, CPU µs/request', side, same.cpu);
        record('key check, CPU µs/request', side, verify.cpu - same.cpu);
        record('verify, req/s', side, verify.rps);
      }
      const check = figures['key check, CPU µs/request'];
      console.log(
        `round ${round + 1}: key check ${check.base[round].toFixed(1)} (base) ${check.this[round].toFixed(1)} (this)`,
      );
    }

    console.log(`\nmedians of ${ROUNDS} rounds; change: median of the per-round differences (this − base)`);
    console.log(`${'figure'.padEnd(28)}${'base'.padStart(10)}${'this'.padStart(10)}${'change'.padStart(10)}`);
    for (const [name, { base: a, this: b }] of Object.entries(figures)) {
      const change = median(b.map((value, i) => value - a[i]));
      console.log(
        `${name.padEnd(28)}${median(a).toFixed(1).padStart(10)}${median(b).toFixed(1).padStart(10)}${change.toFixed(1).padStart(10)}`,
      );
    }
  } finally {
    await Promise.all([servers.base?.server.stop(), servers.this?.server.stop()]);
    removeCompiledServers();
    base.removeCompiledServers();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Signs up an organization and makes the service key both processes verify. */
async function serviceKey(url: string): Promise<string> {
  const token = await signUpForBench(url);
  const { key } = await postJson<{ key: string }>(
    url,
    '/v1/api-keys',
    {
      name: 'bench a/b',
      role: 'developer',
      type: 'service',
      rate_limit: { requests_per_minute: 1_000_000, requests_per_hour: 60_000_000 },
    },
    token,
  );
  return key;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
