/**
 * `npm run bench:verify`: what the key check costs, against a bare NestJS app.
 *
 * Three processes: this driver (autocannon), Gatehouse (bench-server.ts) on PostgreSQL, and a bare
 * NestJS app (bare-server.ts), each in its own process so neither slows the other with its own
 * background work. Measured: the bare route, a public Gatehouse route (GET /health/live: middleware
 * and the global guards, no credential) and GET /v1/auth/verify with a valid key (the whole key
 * check). Then again with 100,000 more keys in the table.
 *
 * Throughput on a shared 2-core machine drifts from second to second, so the scenarios run in
 * interleaved rounds (the order rotates each round, so none always goes first) and each ratio is
 * taken within a round; the figure is the median of those per-round ratios, with their range.
 *
 *   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench:verify
 *
 * DATABASE_URL names the server: a fresh database is created for the run and dropped after it.
 */
import autocannon from 'autocannon';
import { ChildProcess, execSync, fork } from 'node:child_process';
import { join } from 'node:path';
import { Client } from 'pg';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const ROUNDS = Math.max(5, Number(process.env.BENCH_ROUNDS ?? 7));
const FILLER_KEYS = Number(process.env.BENCH_KEYS ?? 100_000);
const TARGETS = { public: 0.95, verify: 0.85 };

interface Sample {
  rps: number;
  p50: number;
  p99: number;
  /** CPU time (user + system, µs) of the process that served, per request. */
  cpu: number;
}

interface Server {
  child: ChildProcess;
  next<T>(type: string): Promise<T>;
  cpu(): Promise<number>;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const percent = (value: number): string => `${(value * 100).toFixed(1)}%`;

function start(file: string, env: NodeJS.ProcessEnv): Server {
  const child = fork(join(__dirname, file), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
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
  return {
    child,
    next,
    async cpu() {
      const reply = next<{ micros: number }>('cpu');
      child.send({ type: 'cpu' });
      return (await reply).micros;
    },
  };
}

/** A fresh database on the server DATABASE_URL names; dropped by the returned function. */
async function benchDatabase(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `bench_${process.pid}_${Date.now()}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
    },
  };
}

async function main(): Promise<void> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    console.error(
      'bench:verify measures on PostgreSQL: set DATABASE_URL to a server, e.g.\n' +
        '  DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench:verify',
    );
    process.exit(2);
  }
  const database = await benchDatabase(serverUrl);
  const app = start('bench-server.ts', { ...process.env, DATABASE_URL: database.url });
  const bare = start('bare-server.ts', { PATH: process.env.PATH, NODE_ENV: 'production' });
  try {
    const [{ appUrl }, { url: bareUrl }] = await Promise.all([
      app.next<{ appUrl: string }>('ready'),
      bare.next<{ url: string }>('ready'),
    ]);
    const key = await createKey(appUrl);
    const scenarios = {
      bare: { url: `${bareUrl}/bare`, headers: {}, server: bare },
      public: { url: `${appUrl}/health/live`, headers: {}, server: app },
      verify: { url: `${appUrl}/v1/auth/verify`, headers: { authorization: `Bearer ${key}` }, server: app },
    };
    type Name = keyof typeof scenarios;

    const measure = async (name: Name): Promise<Sample> => {
      const { url, headers, server } = scenarios[name];
      const before = await server.cpu();
      const result = await autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION });
      if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
        throw new Error(
          `${name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`,
        );
      }
      const cpu = ((await server.cpu()) - before) / result.requests.total;
      return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, cpu };
    };

    const phase = async (names: Name[]): Promise<Record<Name, Sample[]>> => {
      // Warm-up: JIT, connection pools, the key cache.
      for (const name of names) {
        await autocannon({
          url: scenarios[name].url,
          headers: scenarios[name].headers,
          connections: CONNECTIONS,
          duration: 2,
        });
      }
      const samples = Object.fromEntries(names.map((name) => [name, [] as Sample[]])) as Record<
        Name,
        Sample[]
      >;
      for (let round = 0; round < ROUNDS; round++) {
        const order = names.map((_, i) => names[(i + round) % names.length]);
        for (const name of order) samples[name].push(await measure(name));
      }
      return samples;
    };

    const few = await phase(['bare', 'public', 'verify']);
    // BENCH_KEYS=0 skips the second phase (a quicker comparison while working on the key check).
    let many: Record<Name, Sample[]> | undefined;
    let keys = 0;
    if (FILLER_KEYS > 0) {
      const seeded = app.next<{ keys: number }>('seeded');
      app.child.send({ type: 'seed', count: FILLER_KEYS });
      keys = (await seeded).keys;
      many = await phase(['bare', 'verify']);
    }

    const commit = execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
    console.log(
      `\ncommit ${commit}; PostgreSQL${process.env.REDIS_URL ? ' + Redis' : ''}; ` +
        `connections=${CONNECTIONS} duration=${DURATION}s rounds=${ROUNDS}, interleaved; medians`,
    );
    console.log(
      'scenario'.padEnd(30),
      'req/s'.padStart(8),
      'p50 ms'.padStart(7),
      'p99 ms'.padStart(7),
      'cpu µs/req'.padStart(11),
    );
    const row = (label: string, samples: Sample[]): void =>
      console.log(
        label.padEnd(30),
        median(samples.map((s) => s.rps))
          .toFixed(0)
          .padStart(8),
        String(median(samples.map((s) => s.p50))).padStart(7),
        String(median(samples.map((s) => s.p99))).padStart(7),
        median(samples.map((s) => s.cpu))
          .toFixed(0)
          .padStart(11),
      );
    row('bare NestJS (own process)', few.bare);
    row('public route (/health/live)', few.public);
    row('verify, 10 keys', few.verify);
    if (many) {
      row('bare NestJS (again)', many.bare);
      row(`verify, ${keys} keys`, many.verify);
    }

    const ratio = (samples: Sample[], baseline: Sample[]): string => {
      const ratios = samples.map((sample, round) => sample.rps / baseline[round].rps);
      return `${percent(median(ratios))}  (rounds ${percent(Math.min(...ratios))}..${percent(Math.max(...ratios))})`;
    };
    console.log(`\nreq/s of the bare app, median of ${ROUNDS} paired rounds:`);
    console.log(
      `  public / bare:           ${ratio(few.public, few.bare)}   target >= ${percent(TARGETS.public)}`,
    );
    console.log(
      `  verify / bare, 10 keys:  ${ratio(few.verify, few.bare)}   target >= ${percent(TARGETS.verify)}`,
    );
    if (many) console.log(`  verify / bare, ${keys} keys: ${ratio(many.verify, many.bare)}`);
  } finally {
    for (const server of [app, bare]) {
      if (server.child.exitCode === null) {
        const exited = new Promise((resolve) => server.child.once('exit', resolve));
        server.child.send({ type: 'exit' });
        await exited;
      }
    }
    await database.drop();
  }
}

/** An administrator, then ten keys with limits no run can reach; the last one is measured. */
async function createKey(appUrl: string): Promise<string> {
  const post = async <T>(path: string, body: unknown, token?: string): Promise<T> => {
    const response = await fetch(`${appUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const { access_token: token } = await post<{ access_token: string }>('/v1/auth/signup', {
    organization_name: 'Bench',
    email: 'bench@example.test',
    password: 'bench-password',
    name: 'Bench',
  });
  let key = '';
  for (let i = 0; i < 10; i++) {
    key = (
      await post<{ key: string }>(
        '/v1/api-keys',
        {
          name: `bench ${i}`,
          role: 'developer',
          type: 'service',
          rate_limit: { requests_per_minute: 1_000_000, requests_per_hour: 60_000_000 },
        },
        token,
      )
    ).key;
  }
  return key;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
