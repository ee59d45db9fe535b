import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { STATUS_CODES } from 'node:http';
import { DomainError, ErrorKind, translateError } from './domain-error';
import { PROBLEM_CONTENT_TYPE, ProblemDocument, ProblemException, problemType } from './problem';

/** The one table from a domain error's kind to its HTTP status. */
export const STATUS_OF_KIND: Readonly<Record<ErrorKind, HttpStatus>> = {
  [ErrorKind.InvalidInput]: HttpStatus.BAD_REQUEST,
  [ErrorKind.Unauthenticated]: HttpStatus.UNAUTHORIZED,
  [ErrorKind.Forbidden]: HttpStatus.FORBIDDEN,
  [ErrorKind.NotFound]: HttpStatus.NOT_FOUND,
  [ErrorKind.Conflict]: HttpStatus.CONFLICT,
  [ErrorKind.TooLarge]: HttpStatus.PAYLOAD_TOO_LARGE,
  [ErrorKind.UnsupportedMediaType]: HttpStatus.UNSUPPORTED_MEDIA_TYPE,
  [ErrorKind.Unprocessable]: HttpStatus.UNPROCESSABLE_ENTITY,
  [ErrorKind.TooManyRequests]: HttpStatus.TOO_MANY_REQUESTS,
  [ErrorKind.Unavailable]: HttpStatus.SERVICE_UNAVAILABLE,
};

/** Headers a kind always carries: a 401 names the scheme; a 503 says when to retry. */
const HEADERS_OF_KIND: Partial<Record<ErrorKind, Record<string, string>>> = {
  [ErrorKind.Unauthenticated]: { 'WWW-Authenticate': 'Bearer' },
  [ErrorKind.Unavailable]: { 'Retry-After': '5' },
};

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
        extensions: {},
        headers: {},
      };
    }
    const domain = translateError(exception);
    if (domain) return shapeDomainError(domain);
    return {
      status: HttpStatus.INTERNAL_SERVER_ERROR,
      code: 'internal_error',
      detail: 'An unexpected error occurred.',
      extensions: {},
      headers: {},
    };
  }
}

function shapeDomainError(error: DomainError): Shaped {
  return {
    status: STATUS_OF_KIND[error.kind],
    code: error.code,
    detail: error.detail,
    extensions: error.errors ? { ...error.extensions, errors: error.errors } : error.extensions,
    headers:
      error.retryAfterSeconds === undefined
        ? (HEADERS_OF_KIND[error.kind] ?? {})
        : { ...HEADERS_OF_KIND[error.kind], 'Retry-After': String(error.retryAfterSeconds) },
  };
}

function messageOf(response: string | object): string | undefined {
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : undefined;
}
