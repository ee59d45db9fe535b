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
 * `limit`: the most bytes a body may have. `direct: false` leaves every body to body-parser (the spec
 * compares the two ways).
 */
export function bodyParsers(limit: number, { direct = true }: { direct?: boolean } = {}): RequestHandler {
  const parseJson = json({ limit, verify: verifyJsonText });
  const parseForm = urlencoded({ limit, extended: false, verify: verifyFormText });
  return (req: Request, res: Response, next: NextFunction) => {
    // Most API calls (every GET, the key check) carry no body: skip the parser machinery entirely.
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
      return next();
    }
    if (direct && readsDirectly(req, limit)) return readJsonDirectly(req, res, next);
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

/** The Content-Type values of the bodies read directly, exactly as sent. */
const DIRECT_TYPES = new Set(['application/json', 'application/json; charset=utf-8']);
const DECIMAL_LENGTH = /^\d{1,10}$/;
const UTF8_BOM = [0xef, 0xbb, 0xbf];
/** JSON's whitespace, then an object or an array: what body-parser's strict mode lets through to JSON.parse. */
// eslint-disable-next-line no-control-regex -- tab, line feed and carriage return are JSON whitespace
const OBJECT_OR_ARRAY = /^[\x20\x09\x0a\x0d]*[[{]/;

/**
 * Whether a body is read here rather than by body-parser: a JSON body of a plain kind, the kind a
 * service sends thousands of times a second to POST /v1/keys/verify, where body-parser's machinery
 * (type-is, content-type, raw-body, iconv-lite, debug) cost about a quarter of what the route adds to a
 * key check (docs/verifying-keys.md). Anything else (another type or charset spelling, a
 * compressed or chunked body, no length, a length over the limit) goes to body-parser, whose answers
 * these match: body-parsers.spec.ts sends the same bodies both ways.
 */
function readsDirectly(req: Request, limit: number): boolean {
  const { headers } = req;
  if (headers['transfer-encoding'] !== undefined || headers['content-encoding'] !== undefined) return false;
  const type = headers['content-type'];
  const length = headers['content-length'];
  return (
    type !== undefined &&
    DIRECT_TYPES.has(type) &&
    length !== undefined &&
    DECIMAL_LENGTH.test(length) &&
    Number(length) <= limit &&
    !req.readableEnded
  );
}

/**
 * The body as body-parser's json() with `verify: verifyJsonText` reads it: the bytes (Node's parser
 * delivers exactly Content-Length of them, or the request ends early), `verifyJsonText` on them, a UTF-8
 * byte order mark dropped (iconv-lite drops it), `{}` for an empty body, only an object or an array at
 * the top (body-parser's strict mode), then JSON.parse.
 */
function readJsonDirectly(req: Request, res: Response, next: NextFunction): void {
  const chunks: Buffer[] = [];
  let received = 0;
  const onData = (chunk: Buffer): void => {
    chunks.push(chunk);
    received += chunk.length;
  };
  const onEnd = (): void => {
    stop();
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received);
    try {
      verifyJsonText(req, res, body);
    } catch (error) {
      return next(error);
    }
    const bom = body.length >= 3 && UTF8_BOM.every((byte, i) => body[i] === byte);
    const text = body.toString('utf8', bom ? 3 : 0);
    if (text.length === 0) {
      req.body = {};
      return next();
    }
    try {
      if (!OBJECT_OR_ARRAY.test(text)) throw new SyntaxError('not an object or an array');
      req.body = JSON.parse(text) as unknown;
    } catch (error) {
      return next(
        new CommonError(CommonErrorCode.MalformedJson, BY_TYPE['entity.parse.failed'][1], { cause: error }),
      );
    }
    next();
  };
  // The client went away before the whole body came: what raw-body reports as request.aborted.
  const onClose = (): void => {
    stop();
    const [code, detail] = BY_TYPE['request.aborted'];
    next(new CommonError(code, detail));
  };
  const stop = (): void => {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('close', onClose);
    req.off('error', onClose);
  };
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('close', onClose);
  req.on('error', onClose);
}
