import { HttpException, HttpStatus } from '@nestjs/common';

/** One field-level complaint of a 400 validation failure. */
export interface FieldError {
  field: string;
  message: string;
}

/** RFC 9457 problem details as this service writes them. */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  request_id: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export function problemType(code: string): string {
  return `urn:gatehouse:problem:${code}`;
}

/**
 * The one exception modules throw for an expected failure: an HTTP status, a stable machine-readable
 * `code` that clients branch on, and a human `detail`. The global filter turns it into problem+json.
 */
export class ProblemException extends HttpException {
  constructor(
    status: HttpStatus,
    readonly code: string,
    detail: string,
    readonly extensions: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super({ code, detail }, status);
  }
}

export const notFound = (what: string): ProblemException =>
  new ProblemException(HttpStatus.NOT_FOUND, 'not_found', `${what} was not found.`);

export const conflict = (code: string, detail: string): ProblemException =>
  new ProblemException(HttpStatus.CONFLICT, code, detail);

export const forbidden = (code: string, detail: string): ProblemException =>
  new ProblemException(HttpStatus.FORBIDDEN, code, detail);

export const unauthorized = (code: string, detail: string): ProblemException =>
  new ProblemException(HttpStatus.UNAUTHORIZED, code, detail, {}, { 'WWW-Authenticate': 'Bearer' });

export const badRequest = (code: string, detail: string, errors?: FieldError[]): ProblemException =>
  new ProblemException(HttpStatus.BAD_REQUEST, code, detail, errors ? { errors } : {});
