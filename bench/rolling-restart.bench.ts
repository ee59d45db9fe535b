/**
 * `npm run bench:restart`: a rolling restart under load. Two Gatehouse processes (compiled src/main.js,
 * as a deployment runs them, on one database and one Redis) stand behind a small load balancer in this
 * process: round robin over the backends whose `GET /health/ready` answered 200 at its last check, every
 * BENCH_RESTART_CHECK_MS (default 250), with kept-alive connections to them and no retries, so every
 * failed forward is an error a client saw (502). Clients (autocannon, BENCH_RESTART_CONNECTIONS, default
 * 10) call `GET /v1/auth/verify` with an API key through it while each process in turn gets SIGTERM, exits,
 * is started again on its port and is ready again. Reported: requests, the answers that were not 200 and
 * the connection errors, per round.
 *
 * Two rounds: the processes as the image runs them (SHUTDOWN_DRAIN_MS=BENCH_RESTART_DRAIN_MS, default
 * 2000: readiness 503 while they still serve, then the port closes), goal no error; and, as a control,
 * SHUTDOWN_DRAIN_MS=0 (the port closes at the SIGTERM), which shows what the bench sees when clients do
 * meet a stop (BENCH_RESTART_CONTROL=0 leaves it out).
 *
 * Needs DATABASE_URL (a PostgreSQL server; the bench gets a database of its own there, dropped after) and
 * REDIS_URL.
 */
import autocannon from 'autocannon';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync } from 'node:fs';
import { once } from 'node:events';
import { Agent, createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { COMPILED_APP_ENV, compiledBenchFile, removeCompiledServers } from './compiled-servers';
import { freshDatabase } from './bench-database';

const CHECK_MS = Number(process.env.BENCH_RESTART_CHECK_MS ?? 250);
const CONNECTIONS = Number(process.env.BENCH_RESTART_CONNECTIONS ?? 10);
const DRAIN_MS = Number(process.env.BENCH_RESTART_DRAIN_MS ?? 2000);

/** One Gatehouse process on a port of its own, started again on the same port after it stops. */
class Instance {
  child?: ChildProcess;
  constructor(
    readonly name: string,
    readonly port: number,
    private readonly env: Record<string, string>,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn(process.execPath, [join(compiledRoot(), 'src', 'main.js')], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...this.env,
        PORT: String(this.port),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    this.child = child;
    // Ready: its own readiness answers 200 (the start's migrations and connections are done).
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${this.name} exited at start (${child.exitCode})`);
      if ((await status(`${this.url}/health/ready`)) === 200) return;
      await sleep(50);
    }
  }

  /** SIGTERM; resolves with the exit code once it has exited. */
  async stop(): Promise<number | null> {
    const child = this.child!;
    if (child.exitCode !== null) return child.exitCode;
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    return code;
  }

  kill(): void {
    if (this.child && this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

/**
 * The root of the compiled tree (compiled-servers.ts compiles src/ and bench/ side by side), with the
 * package.json that the start banner reads the version from.
 */
function compiledRoot(): string {
  const root = join(compiledBenchFile('rolling-restart.bench.ts'), '..', '..');
  copyFileSync(join(__dirname, '..', 'package.json'), join(root, 'package.json'));
  return root;
}

/** The status of a GET (0 when it did not connect or took over a second). */
function status(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { timeout: 1000, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

/**
 * The load balancer: round robin over the backends that passed their last health check, no retries. A
 * forward that fails (refused, reset) answers 502 and is counted.
 */
class Balancer {
  private readonly healthy = new Set<Instance>();
  private next = 0;
  private timer?: NodeJS.Timeout;
  private server?: Server;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });
  failedForwards = 0;

  constructor(private readonly backends: Instance[]) {}

  async listen(): Promise<string> {
    await this.check();
    this.timer = setInterval(() => void this.check(), CHECK_MS);
    this.server = createServer((req, res) => {
      const live = this.backends.filter((backend) => this.healthy.has(backend));
      if (!live.length) {
        this.failedForwards++;
        res.writeHead(502).end('no backend');
        return;
      }
      const backend = live[this.next++ % live.length];
      const forward = request(
        `${backend.url}${req.url}`,
        { method: req.method, headers: req.headers, agent: this.agent },
        (answer: IncomingMessage) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => {
        this.failedForwards++;
        if (!res.headersSent) res.writeHead(502).end('forward failed');
        else res.destroy();
      });
      req.pipe(forward);
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Whether the balancer routes to `backend` now. */
  routesTo(backend: Instance): boolean {
    return this.healthy.has(backend);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
    this.agent.destroy();
  }

  private async check(): Promise<void> {
    await Promise.all(
      this.backends.map(async (backend) => {
        if ((await status(`${backend.url}/health/ready`)) === 200) this.healthy.add(backend);
        else this.healthy.delete(backend);
      }),
    );
  }
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function json<T>(
  method: string,
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** One rolling restart of both processes under load, with this drain. */
async function round(label: string, drainMs: number, databaseUrl: string): Promise<void> {
  const env = {
    ...COMPILED_APP_ENV,
    DATABASE_URL: databaseUrl,
    REDIS_URL: process.env.REDIS_URL ?? '',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ALLOW_SIGNUP: 'true',
    SHUTDOWN_DRAIN_MS: String(drainMs),
    SHUTDOWN_GRACE_MS: String(drainMs + 10_000),
    TOKEN_SIGNING_SECRET: randomBytes(32).toString('hex'),
    API_KEY_HASH_SECRET: randomBytes(32).toString('hex'),
    AUDIT_CHAIN_SECRET: randomBytes(32).toString('hex'),
  };
  const instances = [new Instance('A', await freePort(), env), new Instance('B', await freePort(), env)];
  const balancer = new Balancer(instances);
  try {
    await Promise.all(instances.map((instance) => instance.start()));
    const balancerUrl = await balancer.listen();
    const signup = await json<{ access_token: string }>('POST', `${instances[0].url}/v1/auth/signup`, {
      organization_name: `Restart ${label}`,
      email: `restart-${drainMs}-${Date.now()}@example.test`,
      password: 'restart-bench-password',
      name: 'Restart',
    });
    const { key } = await json<{ key: string }>(
      'POST',
      `${instances[0].url}/v1/api-keys`,
      {
        name: 'restart bench',
        role: 'developer',
        type: 'service',
        // The bench is about restarts: no rate limit in the way of the load.
        rate_limit: { requests_per_minute: 1_000_000, requests_per_hour: 60_000_000 },
      },
      { authorization: `Bearer ${signup.access_token}` },
    );
    // The load runs until the restarts are done (stopped below), every answer counted by status.
    let finished: (result: autocannon.Result) => void = () => undefined;
    const done = new Promise<autocannon.Result>((resolve) => (finished = resolve));
    const load = autocannon(
      {
        url: `${balancerUrl}/v1/auth/verify`,
        headers: { authorization: `Bearer ${key}` },
        connections: CONNECTIONS,
        duration: 600,
      },
      (error, result) => {
        if (error) throw error;
        finished(result);
      },
    );
    const steps: string[] = [];
    await sleep(1000);
    for (const instance of instances) {
      const stoppedAt = Date.now();
      const code = await instance.stop();
      const exitedMs = Date.now() - stoppedAt;
      await instance.start();
      // Back in rotation: the balancer's next check found it ready.
      while (!balancer.routesTo(instance)) await sleep(20);
      steps.push(
        `${instance.name}: exit ${code} ${exitedMs} ms after SIGTERM, in rotation again ${Date.now() - stoppedAt} ms after`,
      );
      await sleep(1000);
    }
    load.stop();
    const result = await done;
    const statuses = Object.entries(result.statusCodeStats ?? {})
      .map(([code, { count }]) => `${code}: ${count}`)
      .join(', ');
    const failures = result.non2xx + result.errors + result.timeouts;
    console.log(
      `\n${label} (SHUTDOWN_DRAIN_MS=${drainMs}, health checks every ${CHECK_MS} ms, ${CONNECTIONS} connections)`,
    );
    for (const step of steps) console.log(`  ${step}`);
    console.log(
      `  clients: ${result.requests.total} requests, ${(result.requests.total / (result.duration || 1)).toFixed(0)}/s; answers ${statuses}; ` +
        `${result.errors} connection errors, ${result.timeouts} timeouts; ${balancer.failedForwards} forwards failed at the balancer`,
    );
    console.log(
      `  errors clients saw: ${failures}${drainMs > 0 ? ' (goal: none)' : ' (the control: no drain)'}`,
    );
  } finally {
    await balancer.close();
    for (const instance of instances) instance.kill();
  }
}

async function main(): Promise<void> {
  if (!process.env.DATABASE_URL) throw new Error('bench:restart needs DATABASE_URL (a PostgreSQL server)');
  const database = await freshDatabase(process.env.DATABASE_URL, 'bench_restart');
  try {
    await round('rolling restart, drained', DRAIN_MS, database.url);
    if (process.env.BENCH_RESTART_CONTROL !== '0') await round('rolling restart, no drain', 0, database.url);
  } finally {
    await database.drop();
    removeCompiledServers();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
