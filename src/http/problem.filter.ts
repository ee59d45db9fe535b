import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { STATUS_CODES } from 'node:http';
import { DomainError, ErrorKind, FieldError, translateError } from '../common/domain-error';
import {
  PROBLEM_CONTENT_TYPE,
  PROBLEM_LIMITS,
  ProblemDocument,
  ProblemException,
  problemType,
} from '../common/problem';
import { responseEnded } from './turn-end-responses';

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
    if (responseEnded(response)) return;

    const body: ProblemDocument = {
      type: problemType(shaped.code),
      title: STATUS_CODES[shaped.status] ?? 'Error',
      status: shaped.status,
      detail: clipText(shaped.detail, PROBLEM_LIMITS.detailBytes),
      code: shaped.code,
      request_id: String(request.id ?? ''),
      ...shaped.extensions,
    };
    if (Array.isArray(body.errors)) body.errors = clipFieldErrors(body.errors);
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

/** Bytes a code point takes in JSON text (UTF-8); control characters and lone surrogates are escaped. */
function jsonBytes(codePoint: number): number {
  if (codePoint === 0x22 || codePoint === 0x5c) return 2;
  if (codePoint < 0x20 || (codePoint >= 0xd800 && codePoint <= 0xdfff)) return 6;
  if (codePoint < 0x80) return 1;
  if (codePoint < 0x800) return 2;
  return codePoint < 0x10000 ? 3 : 4;
}

const ELLIPSIS = '…';
const ELLIPSIS_BYTES = 3;

/**
 * `text` as it is when its JSON encoding fits in `maxBytes`, else cut to fit with an ellipsis: a
 * problem may name what the request sent (an unknown property, say) without echoing all of it. Reads
 * at most `maxBytes` characters, whatever the text's length.
 */
export function clipText(text: string, maxBytes: number): string {
  let used = 0;
  let cut = 0;
  let at = 0;
  for (const char of text) {
    used += jsonBytes(char.codePointAt(0)!);
    if (used > maxBytes) return `${text.slice(0, cut)}${ELLIPSIS}`;
    at += char.length;
    if (used <= maxBytes - ELLIPSIS_BYTES) cut = at;
  }
  return text;
}

function clipFieldErrors(errors: FieldError[]): FieldError[] {
  return errors.slice(0, PROBLEM_LIMITS.errors).map(({ field, message }) => ({
    field: clipText(String(field), PROBLEM_LIMITS.fieldBytes),
    message: clipText(String(message), PROBLEM_LIMITS.messageBytes),
  }));
}
