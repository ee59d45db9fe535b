import { ConfigOf } from '../config/config-namespace';
import { loggingConfig } from '../config/namespaces';
import { Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import pino from 'pino';
import { AppLogger } from './app-logger';
import { LineBlocks, lineBlocksTo } from './line-blocks';
import { REQUEST_LOGGER, writesJsonLinesTo } from './request-logger';

let standardOutput: LineBlocks | undefined;

/**
 * Standard output for JSON lines, written in blocks of 4 KiB, and at least every 100 ms (LineBlocks, in
 * front of pino's synchronous destination). Written a line at a time (pino's default destination), a
 * request line cost 6.7 µs of CPU; gathered by sonic-boom's `minLength`, 3.0; in LineBlocks, less again
 * (`npm run bench:observation`; docs/benchmarks.md). The writes are synchronous: a reader that stops
 * draining standard output holds the process up, rather than its memory growing without bound. What is
 * still gathered is written when the process exits, however it exits (`exit` runs for process.exit and
 * after an uncaught exception); a process killed outright (SIGKILL, the OOM killer) loses up to 100 ms of
 * lines. One per process: every app in it (the tests start many) shares it and its one exit hook.
 */
function bufferedStandardOutput(): pino.DestinationStream {
  if (!standardOutput) {
    const output = lineBlocksTo(1);
    process.once('exit', () => output.flushSync());
    standardOutput = output;
  }
  return standardOutput;
}

/** The process's pino: JSON on standard output, or pretty lines; `destination` replaces both (tests). */
export async function createPino(
  config: ConfigOf<typeof loggingConfig>,
  destination?: pino.DestinationStream,
): Promise<pino.Logger> {
  // Readable lines for a person at a terminal; synchronous, so nothing is lost at exit. Loaded only then:
  // a process logging JSON (production, every test) has no use for its 30 modules.
  destination ??= config.pretty
    ? (await import('pino-pretty')).default({
        sync: true,
        translateTime: 'SYS:HH:MM:ss.l',
        messageFormat: '{if context}{context}: {end}{msg}',
        ignore: 'pid,hostname,context',
      })
    : config.level === 'silent'
      ? undefined
      : bufferedStandardOutput();
  const logger = pino(
    {
      level: config.level,
      // Headers are never logged; these paths catch what could still carry a credential or a row's
      // parameters (a failed INSERT of a user carries its password hash).
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-api-key"]',
          'req.headers.cookie',
          'req.query.api_key',
          'err.parameters',
          'err.driverError.parameters',
          'err.query',
        ],
        censor: '[REDACTED]',
      },
    },
    destination,
  );
  // The request logger writes its line itself, to the same destination, when that takes JSON lines.
  if (destination && !config.pretty) writesJsonLinesTo(logger, destination);
  return logger;
}

/**
 * JSON logs through pino. nestjs-pino carries the application's own logs (app.useLogger); request
 * lines are written by `requestLogger` (see request-logger.ts) on the same pino instance. The
 * nestjs-pino per-request middleware is not mounted: its per-request child logger and
 * AsyncLocalStorage context cost about a quarter of a small request's CPU, and nothing here reads a
 * request-scoped logger.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [REQUEST_LOGGER],
      providers: [
        {
          provide: REQUEST_LOGGER,
          inject: [loggingConfig.KEY],
          useFactory: (config: ConfigOf<typeof loggingConfig>) => createPino(config),
        },
      ],
      useFactory: (logger: pino.Logger) => ({ pinoHttp: { logger }, forRoutes: [] }),
    }),
  ],
  providers: [AppLogger],
  exports: [AppLogger],
})
export class LoggingModule {}
