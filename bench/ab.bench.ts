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
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freshDatabase } from './bench-database';
import { COMPILED_APP_ENV, compiledBenchFile, removeCompiledServers } from './compiled-servers';

const ROUNDS = Math.max(5, Number(process.env.BENCH_ROUNDS ?? 7));
const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

type Side = 'base' | 'this';

interface Server {
  url: string;
  cpu(): Promise<number>;
  send(message: object, reply: string): Promise<void>;
  stop(): void;
}

/** The base checkout's own compiled-servers module: it compiles that tree, not this one. */
function baseCompiler(base: string): Promise<typeof import('./compiled-servers')> {
  return import(join(base, 'bench', 'compiled-servers'));
}

async function start(file: string, env: NodeJS.ProcessEnv): Promise<Server> {
  const child = fork(file, [], {
    execArgv: [],
    env: { ...env, ...COMPILED_APP_ENV },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const next = <T>(type: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const onMessage = (message: { type: string }): void => {
        if (message.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(message as T);
      };
      const onExit = (code: number | null): void => reject(new Error(`${file} exited (${code})`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const { appUrl } = await next<{ appUrl: string }>('ready');
  return {
    url: appUrl,
    async cpu() {
      const reply = next<{ micros: number }>('cpu');
      child.send({ type: 'cpu' });
      return (await reply).micros;
    },
    async send(message, reply) {
      const replied = next(reply);
      child.send(message);
      await replied;
    },
    stop: () => void (child.connected ? child.send({ type: 'exit' }) : child.kill()),
  };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

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
  const servers: Partial<Record<Side, Server>> = {};
  try {
    // One after the other: the first runs the migrations.
    servers.base = await start(base.compiledBenchFile('bench-server.ts'), env);
    servers.this = await start(compiledBenchFile('bench-server.ts'), env);
    const key = await serviceKey(servers.base.url);
    const authorization = `Bearer ${key}`;
    const body = await (
      await fetch(`${servers.base.url}/v1/auth/verify`, { headers: { authorization } })
    ).text();
    for (const server of [servers.base, servers.this])
      await server.send({ type: 'same-body', body }, 'same-body-set');

    const measure = async (side: Side, path: string, headers: Record<string, string>, seconds: number) => {
      const server = servers[side]!;
      const before = await server.cpu();
      const result = await autocannon({
        url: `${server.url}${path}`,
        headers,
        connections: CONNECTIONS,
        duration: seconds,
      });
      const cpu = (await server.cpu()) - before;
      if (result.non2xx || result.errors || result.timeouts || !result.requests.total)
        throw new Error(
          `${side} ${path}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`,
        );
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
    servers.base?.stop();
    servers.this?.stop();
    await new Promise((done) => setTimeout(done, 2000));
    removeCompiledServers();
    base.removeCompiledServers();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Signs up an organization and makes the service key both processes verify. */
async function serviceKey(url: string): Promise<string> {
  const post = async <T>(path: string, body: unknown, token?: string): Promise<T> => {
    const response = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const { access_token: token } = await post<{ access_token: string }>('/v1/auth/signup', {
    organization_name: 'Bench A/B',
    email: 'bench-ab@example.test',
    password: 'bench-password',
    name: 'Bench',
  });
  const { key } = await post<{ key: string }>(
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
