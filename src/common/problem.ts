import { HttpException, HttpStatus } from '@nestjs/common';
import type { FieldError } from './domain-error';

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

/**
 * What a problem document may echo of a request, so that refusing a hostile body never answers a
 * large one: `detail` and each error's `field` and `message` are cut at these sizes (as UTF-8 JSON
 * text, an ellipsis marking the cut) and `errors` lists at most `errors` entries. A whole
 * document stays under 7 KiB.
 */
export const PROBLEM_LIMITS = {
  detailBytes: 1024,
  errors: 20,
  fieldBytes: 100,
  messageBytes: 160,
} as const;

export function problemType(code: string): string {
  return `urn:gatehouse:problem:${code}`;
}

/**
 * An HTTP answer decided at the HTTP layer itself (the key check's refusals, with their headers).
 * Services never throw it: they throw domain errors (domain-error.ts), which the filter maps.
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
