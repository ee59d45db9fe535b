import { HttpStatus } from '@nestjs/common';
import { json, urlencoded } from 'express';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ProblemException } from './problem';

const BY_TYPE: Record<string, [HttpStatus, string, string]> = {
  'entity.parse.failed': [HttpStatus.BAD_REQUEST, 'malformed_json', 'The request body is not valid JSON.'],
  'entity.too.large': [HttpStatus.PAYLOAD_TOO_LARGE, 'payload_too_large', 'The request body is too large.'],
  'encoding.unsupported': [
    HttpStatus.UNSUPPORTED_MEDIA_TYPE,
    'unsupported_encoding',
    'The body encoding is not supported.',
  ],
  'charset.unsupported': [
    HttpStatus.UNSUPPORTED_MEDIA_TYPE,
    'unsupported_charset',
    'The body charset is not supported.',
  ],
  'request.aborted': [
    HttpStatus.BAD_REQUEST,
    'request_aborted',
    'The request body was not received completely.',
  ],
};

/** body-parser's errors (http-errors with a `type`) become problems with a specific code. */
function toProblem(error: unknown): unknown {
  const parserError = error as { type?: string; status?: number };
  const known = parserError?.type ? BY_TYPE[parserError.type] : undefined;
  if (known) return new ProblemException(known[0], known[1], known[2]);
  if (typeof parserError?.status === 'number' && parserError.status >= 400 && parserError.status < 500) {
    return new ProblemException(parserError.status, 'bad_request', 'The request body could not be read.');
  }
  return error;
}

/**
 * Replaces Nest's default parsers so a malformed or oversized body answers a precise problem+json.
 * One middleware for both (JSON, then form): each parser passes over a body that is not its type.
 */
export function bodyParsers(limit: string): RequestHandler {
  const parseJson = json({ limit });
  const parseForm = urlencoded({ limit, extended: false });
  return (req: Request, res: Response, next: NextFunction) => {
    // Most API calls (every GET, the key check) carry no body: skip the parser machinery entirely.
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
      return next();
    }
    parseJson(req, res, (jsonError?: unknown) => {
      if (jsonError) return next(toProblem(jsonError));
      parseForm(req, res, (formError?: unknown) => next(formError ? toProblem(formError) : undefined));
    });
  };
}
