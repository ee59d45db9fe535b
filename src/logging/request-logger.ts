import type { RequestCompletionListener } from '../common/request-context';
import type pino from 'pino';

export const REQUEST_LOGGER = Symbol('REQUEST_LOGGER');

/** Removes `api_key=<value>` from a URL before it is logged. */
export function redactUrl(url: string | undefined): string | undefined {
  return url?.replace(/([?&]api_key=)[^&#]*/gi, '$1[REDACTED]');
}

/**
 * One JSON line per request when it completes: request id, method, URL without `api_key`, user agent,
 * status and duration. No headers, no body. Levels: 5xx error, 4xx warn, else info; when the level is
 * off the cost is one comparison.
 */
export function requestLogger(logger: pino.Logger): RequestCompletionListener {
  return (req, res, seconds) => {
    const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info';
    if (!logger.isLevelEnabled(level)) return;
    logger[level](
      {
        req: {
          id: req.id,
          method: req.method,
          url: redactUrl(req.originalUrl),
          user_agent: req.headers['user-agent'],
        },
        res: { status: res.statusCode },
        response_time_ms: seconds * 1000,
      },
      'request completed',
    );
  };
}
