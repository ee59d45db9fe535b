import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal';

declare module 'http' {
  interface IncomingMessage {
    /** Set by ApiKeyGuard once the credential is resolved. */
    principal?: Principal;
  }
}

// A caller-supplied id is kept only when it is short and plain, so it cannot inject into logs.
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** First middleware of all: every response, even a 404 or a body-parser failure, gets `X-Request-Id`. */
export function requestIdMiddleware(req: Request, res: Response, next: NextFunction): void {
  const incoming = req.header('x-request-id');
  const id = incoming && ACCEPTABLE_REQUEST_ID.test(incoming) ? incoming : `req_${randomUUID()}`;
  req.id = id;
  res.setHeader('X-Request-Id', id);
  next();
}
