import { json, urlencoded } from 'express';
import { isUtf8 } from 'node:buffer';
import type { RawBodyRequest } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { CommonError, CommonErrorCode } from './common.errors';
import {
  inspectJsonText,
  JsonTextProblem,
  MAX_JSON_DEPTH,
  MAX_JSON_ITEMS,
  MAX_JSON_MEMBERS,
  MAX_JSON_PROPERTIES,
} from './json-text';

const tooLarge = (detail: string): CommonError => new CommonError(CommonErrorCode.JsonTooLarge, detail);

function bodyTextError(problem: JsonTextProblem): CommonError {
  switch (problem.kind) {
    case 'invalid_utf8':
      return new CommonError(CommonErrorCode.InvalidUnicode, 'The request body is not valid UTF-8.');
    case 'too_deep':
      return new CommonError(
        CommonErrorCode.JsonTooDeep,
        `The request body is nested deeper than ${MAX_JSON_DEPTH} levels.`,
      );
    case 'too_many_properties':
      return tooLarge(`An object in the request body has more than ${MAX_JSON_PROPERTIES} properties.`);
    case 'too_many_items':
      return tooLarge(`An array in the request body has more than ${MAX_JSON_ITEMS} items.`);
    case 'too_many_members':
      return tooLarge(
        `The request body has more than ${MAX_JSON_MEMBERS} members (properties and array items) in all.`,
      );
    case 'lone_surrogate':
      return new CommonError(
        CommonErrorCode.InvalidUnicode,
        'The request body contains a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF escape).',
      );
    case 'reserved_key':
      return new CommonError(
        CommonErrorCode.ReservedKey,
        `The request body uses the reserved key "${problem.key}".`,
      );
  }
}

/**
 * body-parser's `verify` hook: runs on the raw bytes before JSON.parse. The bytes are kept as
 * `rawBody` (Nest's RawBodyRequest, as its `rawBody: true` option keeps them): a signed body is checked
 * over exactly what was sent (POST /v1/secret-scanning/github). They are the buffer already read,
 * within the same limit, so the body costs no more than it did.
 */
function verifyJsonText(req: RawBodyRequest<Request>, _res: unknown, body: Buffer): void {
  const problem = inspectJsonText(body);
  if (problem) throw bodyTextError(problem);
  req.rawBody = body;
}

/** The same for a form body, whose parser (qs) bounds the parameters itself: its bytes are UTF-8. */
function verifyFormText(_req: unknown, _res: unknown, body: Buffer): void {
  if (!isUtf8(body)) throw bodyTextError({ kind: 'invalid_utf8' });
}

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)/i;

/** Bodies are UTF-8: another declared charset (utf-7, latin1, utf-16…) is refused, never decoded. */
function declaresOtherCharset(req: Request): boolean {
  const charset = CHARSET.exec(req.headers['content-type'] ?? '')?.[1];
  return charset !== undefined && !/^utf-?8$/i.test(charset);
}

const BY_TYPE: Record<string, [CommonErrorCode, string]> = {
  'entity.parse.failed': [CommonErrorCode.MalformedJson, 'The request body is not valid JSON.'],
  'entity.too.large': [CommonErrorCode.PayloadTooLarge, 'The request body is too large.'],
  'encoding.unsupported': [CommonErrorCode.UnsupportedEncoding, 'The body encoding is not supported.'],
  'charset.unsupported': [CommonErrorCode.UnsupportedCharset, 'The body charset is not supported.'],
  'request.aborted': [CommonErrorCode.RequestAborted, 'The request body was not received completely.'],
};

/** body-parser's errors (http-errors with a `type`) become problems with a specific code. */
function toProblem(error: unknown): unknown {
  // What `verify` throws comes back as itself (http-errors only adds a status and type): the answer.
  if (error instanceof CommonError) return error;
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
  const parseJson = json({ limit, verify: verifyJsonText });
  const parseForm = urlencoded({ limit, extended: false, verify: verifyFormText });
  return (req: Request, res: Response, next: NextFunction) => {
    // Most API calls (every GET, the key check) carry no body: skip the parser machinery entirely.
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
      return next();
    }
    if (declaresOtherCharset(req)) {
      return next(
        new CommonError(
          CommonErrorCode.UnsupportedCharset,
          'The body must be UTF-8; no other charset is accepted.',
        ),
      );
    }
    parseJson(req, res, (jsonError?: unknown) => {
      if (jsonError) return next(toProblem(jsonError));
      parseForm(req, res, (formError?: unknown) => next(formError ? toProblem(formError) : undefined));
    });
  };
}
