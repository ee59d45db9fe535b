import type { ExecutionContext } from '@nestjs/common';
import type { Request, Response } from 'express';

/**
 * The request and response of an HTTP execution context: its first and second arguments, which is what
 * `switchToHttp().getRequest()` and `getResponse()` answer. Read directly on the key check's path because
 * Nest's `switchToHttp()` assigns three new closures to the context on every call.
 */
export function requestOf(context: ExecutionContext): Request {
  return context.getArgByIndex<Request>(0);
}

export function responseOf(context: ExecutionContext): Response {
  return context.getArgByIndex<Response>(1);
}
