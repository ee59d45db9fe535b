/**
 * The process under test: Gatehouse alone (the bare NestJS baseline runs in bench/bare-server.ts, a
 * process of its own). Driven over IPC by bench/verify.bench.ts, bench/tasks.bench.ts (which also
 * asks it for its memory: a snapshot, or the peak RSS sampled every RSS_SAMPLE_MS between
 * `rss-start` and `rss-stop`) and bench/task-streams.bench.ts (its CPU time and SQL statements sent). Imports only the app's entry points (AppModule, configureApp,
 * loadAppConfig; @Public() for the same-body route; TasksService for bench:queue's service-level case), so
 * the same file runs against older commits for before/after figures.
 */
// bench:tracing runs this server with OTEL_EXPORTER_OTLP_ENDPOINT set: telemetry then starts before
// anything requires http, pg or ioredis, as src/main.ts starts it (required only then, so that this file
// still runs against commits from before telemetry).
// eslint-disable-next-line @typescript-eslint/no-require-imports
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) require('../src/telemetry/api-telemetry');
import 'reflect-metadata';
import { Controller, Get, Header, Module, Req } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Client } from 'pg';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import type { Principal } from '../src/access/principal';
import { AppModule } from '../src/app.module';
import { APP_OPTIONS, configureApp } from '../src/app.setup';
import { loadAppConfig } from '../src/config/app-config';
import { TasksService } from '../src/tasks/tasks.service';
import { StableShapeExpressAdapter } from '../src/http/stable-shape.adapter';
import { Public, RequirePermissions } from '../src/access/route-access.decorators';

type Command =
  | { type: 'same-body'; body: string }
  | { type: 'seed'; count: number }
  | { type: 'enqueue'; count: number; concurrency: number }
  | { type: 'exit' }
  | { type: 'cpu' }
  | { type: 'queries' }
  | { type: 'memory' }
  | { type: 'rss-start' }
  | { type: 'rss-stop' };

const RSS_SAMPLE_MS = 50;

/**
 * Every SQL statement this process sends, counted at the driver (pg's Client.query, which TypeORM's pool
 * and the LISTEN connection both use), in total and those naming task_events: bench:streams asks for
 * them to report queries per delivered event. Patched here, not in the app, so older commits count alike.
 */
const queryCounts = { total: 0, taskEvents: 0 };
/** BENCH_QUERY_HISTOGRAM=<file>: every statement's first 140 characters, counted, written there at exit. */
const queryHistogram = new Map<string, number>();
if (process.env.BENCH_QUERY_HISTOGRAM)
  process.on('exit', () =>
    writeFileSync(
      process.env.BENCH_QUERY_HISTOGRAM!,
      [...queryHistogram]
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${v}\t${k}`)
        .join('\n'),
    ),
  );
const clientQuery = Client.prototype.query as (...args: unknown[]) => unknown;
Client.prototype.query = function (this: Client, ...args: unknown[]): unknown {
  const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
  queryCounts.total++;
  if (text?.includes('task_events')) queryCounts.taskEvents++;
  if (process.env.BENCH_QUERY_HISTOGRAM) {
    const key = (text ?? '?').replace(/\s+/g, ' ').slice(0, 140);
    queryHistogram.set(key, (queryHistogram.get(key) ?? 0) + 1);
  }
  return clientQuery.apply(this, args);
} as typeof Client.prototype.query;

/** Peak RSS as the kernel saw it (VmHWM, bytes), Linux only; undefined elsewhere. */
function kernelPeakRss(): number | undefined {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Resets VmHWM to the current RSS (Linux >= 4.0); false when that is not possible. */
function resetKernelPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

/** Records the largest process.memoryUsage().rss seen, every RSS_SAMPLE_MS. */
class RssSampler {
  private timer?: NodeJS.Timeout;
  private peak = 0;
  private samples = 0;
  private kernelReset = false;

  start(): number {
    this.stop();
    this.kernelReset = resetKernelPeakRss();
    this.peak = 0;
    this.samples = 0;
    this.sample();
    this.timer = setInterval(() => this.sample(), RSS_SAMPLE_MS);
    return this.peak;
  }

  stop(): { peak: number; samples: number; kernelPeak?: number } {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.sample();
    return {
      peak: this.peak,
      samples: this.samples,
      kernelPeak: this.kernelReset ? kernelPeakRss() : undefined,
    };
  }

  private sample(): void {
    this.peak = Math.max(this.peak, process.memoryUsage().rss);
    this.samples++;
  }
}

/** What GET /bench/same-body answers: the verify body of the measured key, set over IPC (`same-body`). */
let sameBody = '';

/**
 * The yardstick for the key check's own cost: a public route returning the same body as
 * GET /v1/auth/verify, with the same handler shape (the request as its one parameter, the body as a
 * string with the same Content-Type), so that verify minus this route is the key check and nothing else.
 * This module is the root, so Nest registers the route before every API route: the cheapest route match
 * there is, which counts the router's walk to /v1/auth/verify against the key check, not for it.
 */
@Controller('bench')
class SameBodyController {
  @Public()
  @Get('same-body')
  @Header('Content-Type', 'application/json; charset=utf-8')
  sameBody(@Req() _request: unknown): string {
    return sameBody;
  }

  /**
   * The same body behind the key check, for any credential (as verify, which answers only an API key:
   * an OAuth access token gets 401 api_key_required from its handler): bench:verify's OAuth phase
   * compares an API key and an OAuth access token here, where nothing but the key check differs.
   */
  @RequirePermissions()
  @Get('credential')
  @Header('Content-Type', 'application/json; charset=utf-8')
  credential(@Req() _request: unknown): string {
    return sameBody;
  }
}

@Module({ controllers: [SameBodyController] })
class BenchModule {}

async function main(): Promise<void> {
  const config = loadAppConfig({
    ...process.env,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    ALLOW_SIGNUP: 'true',
    BCRYPT_ROUNDS: '4',
    // One key driven by 50 connections: the per-key in-flight cap (default 20) would refuse the rest.
    MAX_CONCURRENT_REQUESTS_PER_KEY: process.env.MAX_CONCURRENT_REQUESTS_PER_KEY ?? '1000',
    DATA_DIR: process.env.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'gatehouse-bench-')),
  });
  // abortOnError: false, so a failed boot is thrown (and printed below) instead of Nest's silent exit(1).
  const root = { module: BenchModule, imports: [AppModule.forRoot(config)] };
  const app = await NestFactory.create(root, new StableShapeExpressAdapter(), {
    ...APP_OPTIONS,
    logger: false,
    abortOnError: false,
  });
  configureApp(app);
  await app.listen(0, '127.0.0.1');

  const appUrl = await app.getUrl();
  const dataSource = app.get(DataSource);
  const sampler = new RssSampler();

  process.on('message', (message: Command) => {
    void (async () => {
      if (message.type === 'same-body') {
        sameBody = message.body;
        process.send!({ type: 'same-body-set' });
      }
      if (message.type === 'cpu') {
        const { user, system } = process.cpuUsage();
        process.send!({ type: 'cpu', micros: user + system });
      }
      if (message.type === 'queries') {
        process.send!({ type: 'queries', ...queryCounts });
      }
      if (message.type === 'memory') {
        process.send!({ type: 'memory', ...process.memoryUsage() });
      }
      if (message.type === 'rss-start') {
        process.send!({ type: 'rss-started', rss: sampler.start() });
      }
      if (message.type === 'rss-stop') {
        process.send!({ type: 'rss-stopped', ...sampler.stop() });
      }
      if (message.type === 'exit') {
        await app.close();
        process.exit(0);
      }
      if (message.type === 'enqueue') {
        // The queue without HTTP: `count` echo tasks through TasksService.create (the service a
        // controller calls), `concurrency` at a time, for the first organization (bench:queue).
        const [{ id: organizationId }] = await dataSource.query<{ id: string }[]>(
          'SELECT id FROM organizations ORDER BY created_at LIMIT 1',
        );
        const principal: Principal = {
          kind: 'api_key',
          organizationId,
          userId: null,
          apiKeyId: null,
          role: 'developer',
          permissions: new Set(),
        };
        const tasks = app.get(TasksService);
        let next = 0;
        const started = Date.now();
        await Promise.all(
          Array.from({ length: message.concurrency }, async () => {
            while (next++ < message.count) {
              await tasks.create(
                principal,
                { instruction: 'bench', agent_type: 'echo' },
                undefined,
                undefined,
              );
            }
          }),
        );
        process.send!({ type: 'enqueued', started, finished: Date.now() });
      }
      if (message.type === 'seed') {
        // Filler keys with distinct random hashes: the table grows, the looked-up key stays the same.
        await dataSource.query(
          `INSERT INTO api_keys (id, organization_id, name, role, type, key_hash, start)
           SELECT 'key_fill' || lpad(g::text, 18, '0'), 'org_fill', 'filler', 'viewer', 'service',
                  md5(random()::text || g::text) || md5(g::text), 'sk_filler_'
             FROM generate_series(1, $1) AS g`,
          [message.count],
        );
        await dataSource.query('ANALYZE api_keys');
        const [{ count }] = await dataSource.query<{ count: string }[]>('SELECT count(*) FROM api_keys');
        process.send!({ type: 'seeded', keys: Number(count) });
      }
    })();
  });
  process.send!({ type: 'ready', appUrl: appUrl.replace('[::1]', '127.0.0.1') });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
