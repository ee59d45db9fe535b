import { ConfigOf } from '../config/config-namespace';
import { loggingConfig } from '../config/namespaces';
import { Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import pino from 'pino';
import { AppLogger } from './app-logger';
import { REQUEST_LOGGER } from './request-logger';

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
    : undefined;
  return pino(
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
