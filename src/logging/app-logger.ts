import { Inject, Injectable } from '@nestjs/common';
import { Logger, PARAMS_PROVIDER_TOKEN, type Params, PinoLogger } from 'nestjs-pino';

/**
 * Nest's own start-up lines (a line per module initialised, per controller and per route mapped: about
 * a hundred) are wiring, not news: they go to `debug`. At `info` the start says what a person needs,
 * in the start banner (src/start-banner.ts).
 */
const WIRING_CONTEXTS = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestFactory',
  'NestApplication',
]);

/** The application's logger: nestjs-pino's, with Nest's wiring lines moved to debug. */
@Injectable()
export class AppLogger extends Logger {
  constructor(logger: PinoLogger, @Inject(PARAMS_PROVIDER_TOKEN) params: Params) {
    super(logger, params);
  }

  override log(message: unknown, ...optionalParams: unknown[]): void {
    const context = optionalParams[optionalParams.length - 1];
    if (typeof context === 'string' && WIRING_CONTEXTS.has(context)) this.debug(message, ...optionalParams);
    else super.log(message, ...optionalParams);
  }
}
