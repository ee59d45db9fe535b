import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';

// A caller-supplied id is kept only when it is short and plain, so it cannot inject into logs.
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Told about every answered request, once, with its duration: metrics and the request log. */
export type RequestCompletionListener = (req: Request, res: Response, seconds: number) => void;

/**
 * First middleware of all: every response, even a 404 or a body-parser failure, gets `X-Request-Id`,
 * and the completion listeners share one 'finish' listener and one clock reading (this runs on every
 * request, so it does the least it can).
 */
export function requestObserver(listeners: RequestCompletionListener[]) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    const incoming = req.headers['x-request-id'];
    const id =
      typeof incoming === 'string' && ACCEPTABLE_REQUEST_ID.test(incoming) ? incoming : `req_${randomUUID()}`;
    req.id = id;
    res.setHeader('X-Request-Id', id);
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      for (const listener of listeners) listener(req, res, seconds);
    });
    next();
  };
}
