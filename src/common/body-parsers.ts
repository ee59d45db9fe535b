import { json, urlencoded } from 'express';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { CommonError, CommonErrorCode } from './common.errors';

const BY_TYPE: Record<string, [CommonErrorCode, string]> = {
  'entity.parse.failed': [CommonErrorCode.MalformedJson, 'The request body is not valid JSON.'],
  'entity.too.large': [CommonErrorCode.PayloadTooLarge, 'The request body is too large.'],
  'encoding.unsupported': [CommonErrorCode.UnsupportedEncoding, 'The body encoding is not supported.'],
  'charset.unsupported': [CommonErrorCode.UnsupportedCharset, 'The body charset is not supported.'],
  'request.aborted': [CommonErrorCode.RequestAborted, 'The request body was not received completely.'],
};

/** body-parser's errors (http-errors with a `type`) become problems with a specific code. */
function toProblem(error: unknown): unknown {
  const parserError = error as { type?: string; status?: number };
  const known = parserError?.type ? BY_TYPE[parserError.type] : undefined;
  if (known) return new CommonError(known[0], known[1], { cause: error });
  if (typeof parserError?.status === 'number' && parserError.status >= 400 && parserError.status < 500) {
    return new CommonError(CommonErrorCode.BadRequest, 'The request body could not be read.', {
      cause: error,
    });
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
