import type { ExecutionContext } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { PermissionQuery } from '../api-keys/verification/permission-query';
import type { AccessDenial } from './access-denial';
import { requestOf, responseOf } from '../http/http-context';
import type { Principal } from './principal';

/**
 * One use of a key going through the key check (KeyCheck, key-check.ts): a request to this API, or
 * a request another service received and verifies (POST /v1/keys/verify: `verification` set).
 */
export interface AccessAttempt {
  context: ExecutionContext;
  /**
   * The request the key came with. For a verification, the request the calling service describes: its
   * `principal` (once the credential step resolved it) is the verified key's, `ip` and `headers.referer`
   * are the body's `ip` and `referrer`; it has no method, route or other header.
   */
  request: Request;
  /** The response the answer goes out on (a verification's: the verify call's, which holds its slot in flight). */
  response: Response;
  /** Set when the attempt is POST /v1/keys/verify's: what the calling service asks about the key. */
  verification?: KeyVerification;
}

/** What POST /v1/keys/verify checks: a key value presented to a service of `organizationId`. */
export interface KeyVerification {
  /** The calling service's organization: a key of another is not found. */
  readonly organizationId: string;
  readonly key: string;
  /** Stands for the route's permission: null when the body has none (any key of the organization passes). */
  readonly permissions: PermissionQuery | null;
  /** Credits a valid verify spends, all or none, instead of a request's one. */
  readonly cost: number;
  /** The calling service's socket (ApiKeyResolver.resolveForOrganization). */
  readonly connection: object;
  /**
   * Set by the credential step: the key of the organization the value names, even when it is refused
   * (expired, revoked, disabled), so that the answer names it.
   */
  named?: Principal;
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
 * One rule of the key check, in a class of its own (KeyCheck calls each by name, key-check.ts); an
 * extension's access policy is one too. A step that decides without I/O may answer directly rather than
 * with a promise.
 */
export interface AccessStep {
  check(attempt: AccessAttempt): StepOutcome | Promise<StepOutcome>;
}
