/**
 * `npm run bench:tracing`: the key check with OpenTelemetry on, beside off. Two Gatehouse processes
 * (bench-server.ts, compiled, on one PostgreSQL and Redis, each with a database of its own): one without
 * OTEL_EXPORTER_OTLP_ENDPOINT, one exporting to a receiver in this process that takes the batches and
 * answers 200 (what a collector on the same host costs the sender). `GET /v1/auth/verify` with an API key,
 * BENCH_CONNECTIONS (50) connections, BENCH_ROUNDS (5) interleaved rounds of BENCH_DURATION seconds
 * after a warm-up; reported: requests a second and server CPU per request, medians, and on / off. A
 * third process traces 10% of the requests (OTEL_TRACES_SAMPLER=parentbased_traceidratio): with every
 * request a trace (the default), tracing costs the most it can.
 */
import autocannon from 'autocannon';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertClean, median, type BenchServer, startBenchServer } from './bench-child';
import { freshDatabase } from './bench-database';
import { compiledBenchFile, removeCompiledServers } from './compiled-servers';
import { organization, setting } from './paired-rounds';

const CONNECTIONS = setting('BENCH_CONNECTIONS', 50, 1);
const ROUNDS = setting('BENCH_ROUNDS', 5, 1);
const DURATION = setting('BENCH_DURATION', 5, 1);
/** The share of requests the sampled side traces (OTEL_TRACES_SAMPLER_ARG). */
const SAMPLED = 0.1;

async function main(): Promise<void> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error('bench:tracing needs DATABASE_URL (a PostgreSQL server)');
  let spansReceived = 0;
  const receiver = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') spansReceived += (body.match(/"spanId"/g) ?? []).length;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const databases = await Promise.all([
    freshDatabase(serverUrl, 'bench_off'),
    freshDatabase(serverUrl, 'bench_on'),
    freshDatabase(serverUrl, 'bench_sampled'),
  ]);
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-tracing-'));
  const start = (label: string, databaseUrl: string, extra: NodeJS.ProcessEnv): BenchServer =>
    startBenchServer(label, compiledBenchFile('bench-server.ts'), {
      ...process.env,
      DATABASE_URL: databaseUrl,
      DATA_DIR: join(dataDir, label),
      BENCH_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      REDIS_KEY_PREFIX: `${label}:`,
      ...extra,
    });
  const off = start('tracing-off', databases[0].url, { OTEL_EXPORTER_OTLP_ENDPOINT: '' });
  const on = start('tracing-on', databases[1].url, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
    OTEL_BSP_SCHEDULE_DELAY: '1000',
  });
  const sampled = start('tracing-sampled', databases[2].url, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
    OTEL_BSP_SCHEDULE_DELAY: '1000',
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: String(SAMPLED),
  });
  try {
    const servers = { off, on, sampled };
    const urls: Record<string, string> = {};
    const keys: Record<string, string> = {};
    for (const [name, server] of Object.entries(servers)) {
      const { appUrl } = await server.next<{ appUrl: string }>('ready');
      urls[name] = appUrl;
      keys[name] = (await organization(appUrl, `Tracing ${name}`)).key;
    }
    type Side = keyof typeof servers;
    const run = async (name: Side, duration: number) => {
      const cpuBefore = await servers[name].cpu();
      const result = await autocannon({
        url: `${urls[name]}/v1/auth/verify`,
        headers: { authorization: `Bearer ${keys[name]}` },
        connections: CONNECTIONS,
        duration,
      });
      assertClean(`verify, tracing ${name}`, result);
      const cpu = (await servers[name].cpu()) - cpuBefore;
      return { rps: result.requests.average, cpu: cpu / result.requests.total };
    };
    const sides: Side[] = ['off', 'on', 'sampled'];
    for (const side of sides) await run(side, 2);
    const samples: Record<Side, { rps: number; cpu: number }[]> = { off: [], on: [], sampled: [] };
    // Each round in another order, so no side always follows the same one.
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < sides.length; i++) {
        const side = sides[(i + round) % sides.length];
        samples[side].push(await run(side, DURATION));
      }
    }
    const ratiosOf = (side: Side) => samples[side].map((sample, i) => sample.rps / samples.off[i].rps);
    const rps = (name: Side) => median(samples[name].map((s) => s.rps));
    const cpu = (name: Side) => median(samples[name].map((s) => s.cpu));
    const versus = (side: Side) =>
      `${median(ratiosOf(side)).toFixed(2)} of off (rounds ${ratiosOf(side)
        .map((r) => r.toFixed(2))
        .join(', ')}); CPU +${(((cpu(side) - cpu('off')) / cpu('off')) * 100).toFixed(0)}%`;
    console.log(
      `\nGET /v1/auth/verify, ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${DURATION} s (medians)`,
    );
    console.log(
      `  tracing off: ${rps('off').toFixed(0)} req/s, server CPU ${cpu('off').toFixed(1)} µs a request`,
    );
    console.log(
      `  tracing on, every request: ${rps('on').toFixed(0)} req/s, server CPU ${cpu('on').toFixed(1)} µs a request: ${versus('on')}`,
    );
    console.log(
      `  tracing on, ${SAMPLED * 100}% sampled: ${rps('sampled').toFixed(0)} req/s, server CPU ${cpu('sampled').toFixed(1)} µs a request: ${versus('sampled')}`,
    );
    console.log(
      `  (a traced request: its server span, the key check's steps, its Redis command; ${spansReceived} spans received)`,
    );
  } finally {
    await Promise.all([off.stop(), on.stop(), sampled.stop()]);
    removeCompiledServers();
    await Promise.all(databases.map((database) => database.drop()));
    rmSync(dataDir, { recursive: true, force: true });
    receiver.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
