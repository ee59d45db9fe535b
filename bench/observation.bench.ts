/**
 * `npm run bench:observation`: what observing one request costs in this process, in isolation: the
 * request log line (at info, into /dev/null, as `requestLogger` writes it; then through pino, as it was
 * written before: into the same blocks, into blocks sonic-boom gathers itself, a write a line, and through
 * the logger's redact paths), the HTTP metrics of one request and the key-check metric. Each figure is the
 * median of 7 runs of 200,000 calls, in µs a call. A server adds what these loops cannot show (its
 * garbage, the write to a real standard output): bench:verify measures the whole at LOG_LEVEL=info.
 */
import type { Request, Response } from 'express';
import pino from 'pino';
import { lineBlocksTo } from '../src/logging/line-blocks';
import { createPino } from '../src/logging/logging.module';
import { requestLogger } from '../src/logging/request-logger';
import { MetricsService } from '../src/metrics/metrics.service';

const CALLS = 200_000;
const RUNS = 7;

// The service's own logger (its redact paths included), writing into /dev/null as it writes standard
// output (LineBlocks: blocks of 4 KiB); the same logger with sonic-boom gathering the blocks itself, as
// before LineBlocks; and with a write for every line, as before the blocks.
const destination = lineBlocksTo('/dev/null');
// The blocks as sonic-boom's own `minLength` gathered them (before LineBlocks).
const sonicBoomBlocks = pino.destination({ dest: '/dev/null', sync: true, minLength: 4096 });
const lineByLine = pino.destination({ dest: '/dev/null', sync: true });

async function main(): Promise<void> {
  const logger = await createPino({ level: 'info', pretty: false }, destination);
  const eachLineWritten = await createPino({ level: 'info', pretty: false }, lineByLine);
  const gatheredBySonicBoom = await createPino({ level: 'info', pretty: false }, sonicBoomBlocks);
  const req = {
    id: 'req_123e4567-e89b-12d3-a456-426614174000',
    method: 'GET',
    originalUrl: '/v1/auth/verify',
    baseUrl: '',
    route: { path: '/v1/auth/verify' },
    headers: { 'user-agent': 'autocannon' },
  } as unknown as Request;
  const res = { statusCode: 200 } as Response;
  const metrics = new MetricsService();

  // requestLogger writes its own line to a logger createPino made; given a child of it (another logger
  // object, same output) it goes through pino, as it did before: the "through pino" figures.
  const logLine = (log: ReturnType<typeof requestLogger>) => (seconds: number) => log(req, res, seconds);
  const cases: Record<string, (seconds: number) => void> = {
    'request log line, as written (requestLogger)': logLine(requestLogger(logger)),
    'the line through pino, the same blocks': logLine(requestLogger(logger.child({}))),
    "the line through pino, sonic-boom's blocks": logLine(requestLogger(gatheredBySonicBoom.child({}))),
    'the line through pino, a write a line': logLine(requestLogger(eachLineWritten.child({}))),
    'the line through pino and its redact paths': (seconds) =>
      logger.info(
        {
          req: {
            id: req.id,
            method: req.method,
            url: req.originalUrl,
            user_agent: req.headers['user-agent'],
          },
          res: { status: res.statusCode },
          response_time_ms: seconds * 1000,
        },
        'request completed',
      ),
    'HTTP metrics of a request': (seconds) => metrics.recordRequest(req, res, seconds),
    'key-check metric': () => metrics.recordKeyCheck('allowed'),
  };

  function microsPerCall(call: (seconds: number) => void): number {
    const started = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) call(0.0005 + (i % 7) * 0.001);
    return Number(process.hrtime.bigint() - started) / CALLS / 1000;
  }

  const samples = new Map(Object.keys(cases).map((name) => [name, [] as number[]]));
  for (let run = 0; run < RUNS; run++) {
    for (const [name, call] of Object.entries(cases)) samples.get(name)!.push(microsPerCall(call));
  }
  console.log(`node ${process.version}; ${CALLS} calls a run, median of ${RUNS} runs (min..max), µs a call`);
  for (const [name, values] of samples) {
    values.sort((a, b) => a - b);
    const median = values[Math.floor(values.length / 2)];
    console.log(
      `  ${name.padEnd(46)} ${median.toFixed(2)}  (${values[0].toFixed(2)}..${values[values.length - 1].toFixed(2)})`,
    );
  }
}

void main();
