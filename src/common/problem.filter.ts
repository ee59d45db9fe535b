import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { STATUS_CODES } from 'node:http';
import { isDatabaseUnavailable, isUnstorableText } from '../database/database-errors';
import { PROBLEM_CONTENT_TYPE, ProblemDocument, ProblemException, problemType } from './problem';

const DEFAULT_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable_entity',
  429: 'rate_limited',
  500: 'internal_error',
  503: 'service_unavailable',
};

interface Shaped {
  status: number;
  code: string;
  detail: string;
  extensions: Record<string, unknown>;
  headers: Record<string, string>;
}

/**
 * Every error the service answers, from any layer (guards, pipes, body parser, Nest's router, the
 * database), leaves through here as RFC 9457 problem+json with a stable `code` and the request id.
 * Unknown errors become a bare 500: no message, no stack, nothing internal in the body.
 */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  private readonly logger = new Logger('ProblemFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const shaped = this.shape(exception);

    if (shaped.status >= 500 && shaped.code === 'internal_error') {
      this.logger.error({ err: exception, request_id: request.id }, 'unhandled error');
    }
    if (response.headersSent) return;

    const body: ProblemDocument = {
      type: problemType(shaped.code),
      title: STATUS_CODES[shaped.status] ?? 'Error',
      status: shaped.status,
      detail: shaped.detail,
      code: shaped.code,
      request_id: String(request.id ?? ''),
      ...shaped.extensions,
    };
    for (const [name, value] of Object.entries(shaped.headers)) response.setHeader(name, value);
    response.status(shaped.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
  }

  private shape(exception: unknown): Shaped {
    if (exception instanceof ProblemException) {
      const { detail } = exception.getResponse() as { detail: string };
      return {
        status: exception.getStatus(),
        code: exception.code,
        detail,
        extensions: exception.extensions,
        headers: exception.headers,
      };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      return {
        status,
        code: DEFAULT_CODES[status] ?? 'error',
        detail: messageOf(exception.getResponse()) ?? exception.message,
        extensions: extensionsOf(exception.getResponse()),
        headers: {},
      };
    }
    if (isUnstorableText(exception)) {
      return {
        status: HttpStatus.BAD_REQUEST,
        code: 'invalid_characters',
        detail: 'The request contains characters that cannot be stored, such as NUL.',
        extensions: {},
        headers: {},
      };
    }
    if (isDatabaseUnavailable(exception)) {
      return {
        status: HttpStatus.SERVICE_UNAVAILABLE,
        code: 'database_unavailable',
        detail: 'The database is unreachable; retry shortly.',
        extensions: {},
        headers: { 'Retry-After': '5' },
      };
    }
    return {
      status: HttpStatus.INTERNAL_SERVER_ERROR,
      code: 'internal_error',
      detail: 'An unexpected error occurred.',
      extensions: {},
      headers: {},
    };
  }
}

function messageOf(response: string | object): string | undefined {
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : undefined;
}

/** Terminus puts its per-check report in the exception body; keep it so /health/ready stays informative. */
function extensionsOf(response: string | object): Record<string, unknown> {
  if (typeof response !== 'object' || response === null) return {};
  const { details } = response as { details?: unknown };
  return details ? { checks: details } : {};
}
