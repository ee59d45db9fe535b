import { hostname } from 'node:os';
import type pino from 'pino';
import type { RequestCompletionListener } from '../common/request-context';

export const REQUEST_LOGGER = Symbol('REQUEST_LOGGER');

/** Removes `api_key=<value>` from a URL before it is logged. */
export function redactUrl(url: string | undefined): string | undefined {
  // Most URLs have no '=' and so nothing to remove: a search for one costs a twentieth of the replace.
  if (url === undefined || !url.includes('=')) return url;
  return url.replace(/([?&]api_key=)[^&#]*/gi, '$1[REDACTED]');
}

/**
 * A request's duration as logged, in milliseconds to the microsecond: what a reader of the line uses,
 * and a short decimal, which V8 prints at a third of the cost of a double's seventeen digits.
 */
function durationMs(seconds: number): number {
  return Math.round(seconds * 1e6) / 1000;
}

/** A code unit JSON.stringify would escape (lone surrogates included) or a surrogate of a pair. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what must be escaped
const NEEDS_ESCAPING = /[\u0000-\u001f"\\\ud800-\udfff]/;

/**
 * `JSON.stringify(value)` for a string: one that holds no quote, backslash, control character or
 * surrogate is quoted as it is, which is what JSON.stringify makes of it, for a fifth of its cost (the
 * request id, method and URL of almost every line); any other goes through JSON.stringify.
 */
export function jsonString(value: string): string {
  return NEEDS_ESCAPING.test(value) ? JSON.stringify(value) : `"${value}"`;
}

const jsonDestinations = new WeakMap<pino.Logger, pino.DestinationStream>();

/** Tells the request logger where `logger` writes JSON lines (createPino, for JSON output only). */
export function writesJsonLinesTo(logger: pino.Logger, destination: pino.DestinationStream): void {
  jsonDestinations.set(logger, destination);
}

type RequestLine = (
  level: 'info' | 'warn' | 'error',
  ...fields: Parameters<RequestCompletionListener>
) => void;

/**
 * One JSON line per request when it completes: request id, method, URL without `api_key`, user agent,
 * status and duration. No headers, no body. Levels: 5xx error, 4xx warn, else info; when the level is
 * off the cost is one comparison.
 */
export function requestLogger(parent: pino.Logger): RequestCompletionListener {
  const destination = jsonDestinations.get(parent);
  const write: RequestLine = destination ? lineWriter(parent, destination) : throughPino(parent);
  return (req, res, seconds) => {
    const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info';
    if (parent.isLevelEnabled(level)) write(level, req, res, seconds);
  };
}

/**
 * The line written as pino writes it, made here: a template with each string through JSON.stringify,
 * written straight to the logger's destination. Through pino (its generic walk over the object, and the
 * nested objects through safe-stable-stringify) the line cost 2.5 µs against 1.8 here, in the same blocks
 * (`npm run bench:observation`); it runs on every request, and was most of what observing one cost
 * (README, "Performance"). request-logger.spec.ts checks the line is byte for byte the one pino writes,
 * apart from the time.
 *
 * The redact paths are not applied: they guard what arbitrary log calls might carry (headers, queries,
 * a failed statement's parameters), and this line carries none of those (the URL's api_key is removed).
 */
function lineWriter(logger: pino.Logger, destination: pino.DestinationStream): RequestLine {
  // pino's default base bindings (createPino sets no other): after level and time, before the fields.
  const bindings = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;
  const levels = logger.levels.values;
  const prefixOf = {
    info: `{"level":${levels.info},"time":`,
    warn: `{"level":${levels.warn},"time":`,
    error: `{"level":${levels.error},"time":`,
  };
  return (level, req, res, seconds) => {
    const milliseconds = durationMs(seconds);
    const requestFields =
      field('id', req.id) +
      field('method', req.method) +
      field('url', redactUrl(req.originalUrl)) +
      field('user_agent', req.headers['user-agent']);
    destination.write(
      `${prefixOf[level]}${Date.now()}${bindings},"req":{${requestFields.slice(1)}},` +
        `"res":{"status":${res.statusCode}},` +
        `"response_time_ms":${Number.isFinite(milliseconds) ? milliseconds : null},"msg":"request completed"}\n`,
    );
  };
}

/** `,"name":value`, or nothing for a missing value, as JSON leaves it out. */
function field(name: string, value: unknown): string {
  if (value === undefined) return '';
  return `,"${name}":${typeof value === 'string' ? jsonString(value) : JSON.stringify(value)}`;
}

/** The same line through pino: pretty output, or a logger createPino did not make. */
function throughPino(parent: pino.Logger): RequestLine {
  // The redact paths are skipped here too (see lineWriter): a child without them, same level and output.
  const logger = parent.child({}, { redact: [] });
  return (level, req, res, seconds) =>
    logger[level](
      {
        req: {
          id: req.id,
          method: req.method,
          url: redactUrl(req.originalUrl),
          user_agent: req.headers['user-agent'],
        },
        res: { status: res.statusCode },
        response_time_ms: durationMs(seconds),
      },
      'request completed',
    );
}
