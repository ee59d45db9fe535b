import type { ExecutionContext } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { AccessDenial } from './access-denial';
import { requestOf, responseOf } from '../http/http-context';

/** One request going through the key check. */
export interface AccessAttempt {
  context: ExecutionContext;
  request: Request;
  response: Response;
}

/**
 * The attempt of `context`, made once per request: Nest hands the three global guards one execution
 * context, and they run one after the other, so the last attempt made is the one asked for again
 * (a guard that waited meanwhile may find another request's, and makes its own).
 */
export function accessAttempt(context: ExecutionContext): AccessAttempt {
  if (lastAttempt?.context === context) return lastAttempt;
  // Not switchToHttp(): it assigns three new closures to the context on every call.
  lastAttempt = { context, request: requestOf(context), response: responseOf(context) };
  return lastAttempt;
}

let lastAttempt: AccessAttempt | undefined;

/** What a step answers: undefined to let the request go on, or why it is refused. */
export type StepOutcome = AccessDenial | undefined;

/**
 * One rule of the key check, in a class of its own. A step that decides without I/O answers directly
 * rather than with a promise: the guards await only what is pending, so every request saves the turn.
 */
export interface AccessStep {
  check(attempt: AccessAttempt): StepOutcome | Promise<StepOutcome>;
  /**
   * Compensation: called, latest step first, when a later step refuses the request or fails, because a
   * refused request spends nothing (the credits step gives its credit back). Must do nothing for a
   * request this step did not charge.
   */
  undo?(attempt: AccessAttempt): void | Promise<void>;
}

/** A step's answer that is still pending (a promise; an AccessDenial never has `then`). */
export function isPending<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | undefined)?.then === 'function';
}
