import { Module } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { LoggerModule } from 'nestjs-pino';
import { APP_CONFIG, AppConfig } from '../config/app-config';

/** Removes `api_key=<value>` from a URL before it is logged. */
export function redactUrl(url: string | undefined): string | undefined {
  return url?.replace(/([?&]api_key=)[^&#]*/gi, '$1[REDACTED]');
}

/**
 * JSON logs through pino. Request lines carry the request id, method, redacted URL and user agent;
 * headers are not logged at all, so Authorization and X-API-Key cannot leak, and the redact list
 * covers the places a credential or a query parameter could still appear.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        pinoHttp: {
          level: config.LOG_LEVEL,
          genReqId: (req: IncomingMessage) => req.id as string,
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
          serializers: {
            req: (req: { id: string; method: string; url: string; headers: Record<string, string> }) => ({
              id: req.id,
              method: req.method,
              url: redactUrl(req.url),
              user_agent: req.headers?.['user-agent'],
            }),
            res: (res: { statusCode: number }) => ({ status: res.statusCode }),
          },
          customLogLevel: (_req: IncomingMessage, res: { statusCode: number }, error?: Error) =>
            error || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
        },
      }),
    }),
  ],
})
export class LoggingModule {}
