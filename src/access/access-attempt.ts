import type { ExecutionContext } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { AccessDenial } from './access-denial';

/** One request going through the key check. */
export interface AccessAttempt {
  context: ExecutionContext;
  request: Request;
  response: Response;
}

export function accessAttempt(context: ExecutionContext): AccessAttempt {
  const http = context.switchToHttp();
  return { context, request: http.getRequest<Request>(), response: http.getResponse<Response>() };
}

/** What a step answers: undefined to let the request go on, or why it is refused. */
export type StepOutcome = AccessDenial | undefined;

/** One rule of the key check, in a class of its own. */
export interface AccessStep {
  check(attempt: AccessAttempt): Promise<StepOutcome>;
}
