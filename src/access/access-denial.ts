import { HttpStatus } from '@nestjs/common';
import { ProblemException } from '../common/problem';
import type { CountedKey } from '../usage/usage-counter';

/** Every way the key check can refuse a request. */
export enum AccessDenialCode {
  MissingCredentials = 'missing_credentials',
  MalformedCredentials = 'malformed_credentials',
  AmbiguousCredentials = 'ambiguous_credentials',
  MalformedKey = 'malformed_key',
  InvalidCredentials = 'invalid_credentials',
  KeyExpired = 'key_expired',
  KeyRevoked = 'key_revoked',
  KeyDisabled = 'key_disabled',
  TokenExpired = 'token_expired',
  UserDeactivated = 'user_deactivated',
  /** An access token of a dashboard session that was signed out, sat idle too long or reached its cap. */
  SessionExpired = 'session_expired',
  /** A task token whose attempt ended, was cancelled or lost its lease. */
  TaskTokenExpired = 'task_token_expired',
  /** An OAuth access token presented at a resource it was not issued for (RFC 8707). */
  InvalidToken = 'invalid_token',
  IpNotAllowed = 'ip_not_allowed',
  ReferrerNotAllowed = 'referrer_not_allowed',
  Forbidden = 'forbidden',
  RateLimited = 'rate_limited',
  CreditsExhausted = 'credits_exhausted',
  TooManyConcurrentRequests = 'too_many_concurrent_requests',
}

/**
 * A code of the key check: a built-in one, or one an extension declared with defineAccessDenial.
 * (`string & {}` keeps editors suggesting the built-in names.)
 */
export type DenialCode = AccessDenialCode | (string & {});

/** A step's refusal: which rule, a human detail, and what the response and the audit entry add. */
export class AccessDenial {
  constructor(
    readonly code: DenialCode,
    readonly detail: string,
    /** Response headers beyond the ones the code always carries (rate-limit budgets, Retry-After). */
    readonly headers: Readonly<Record<string, string>> = {},
    /** Extra audit details of a `key.denied` entry (public data only). */
    readonly auditDetails: Readonly<Record<string, unknown>> = {},
    /** Members the problem adds beside `code` and `detail` (a limit's `scope`: `key` or `identity`). */
    readonly problemFields: Readonly<Record<string, unknown>> = {},
  ) {}

  /**
   * The key a credential-step refusal is about (an expired, revoked or disabled key that did resolve),
   * with the identity its record names, so its usage counts the refusal; later steps know the key from
   * `request.principal`.
   */
  subject?: { organizationId: string; key: CountedKey };

  about(key: { organizationId: string; id: string }, identity: { id: string } | null): this {
    this.subject = { organizationId: key.organizationId, key: { id: key.id, identity } };
    return this;
  }
}

export interface DenialResponse {
  status: HttpStatus;
  /** Denials of a resolved key that are written to its audit log as `key.denied`. */
  audited: boolean;
}

/** The one table from a refusal to its HTTP answer. */
export const DENIAL_RESPONSES: Readonly<Record<AccessDenialCode, DenialResponse>> = {
  [AccessDenialCode.MissingCredentials]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.MalformedCredentials]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.AmbiguousCredentials]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.MalformedKey]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.InvalidCredentials]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.KeyExpired]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.KeyRevoked]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.KeyDisabled]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.TokenExpired]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.UserDeactivated]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.SessionExpired]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.TaskTokenExpired]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.InvalidToken]: { status: HttpStatus.UNAUTHORIZED, audited: false },
  [AccessDenialCode.IpNotAllowed]: { status: HttpStatus.FORBIDDEN, audited: true },
  [AccessDenialCode.ReferrerNotAllowed]: { status: HttpStatus.FORBIDDEN, audited: true },
  [AccessDenialCode.Forbidden]: { status: HttpStatus.FORBIDDEN, audited: true },
  [AccessDenialCode.RateLimited]: { status: HttpStatus.TOO_MANY_REQUESTS, audited: true },
  [AccessDenialCode.CreditsExhausted]: { status: HttpStatus.TOO_MANY_REQUESTS, audited: true },
  [AccessDenialCode.TooManyConcurrentRequests]: { status: HttpStatus.TOO_MANY_REQUESTS, audited: false },
};

const extensionResponses = new Map<string, DenialResponse>();

/**
 * Declares the answer to a refusal code of an extension's access policy (see access-policy.ts), so
 * the one table covers it too. Document the code in the extension's own README.md (docs/extending.md):
 * its test checks it with undocumentedDenialCodes.
 */
export function defineAccessDenial(code: string, response: DenialResponse): void {
  if (code in DENIAL_RESPONSES) throw new Error(`"${code}" is a built-in refusal of the key check`);
  extensionResponses.set(code, response);
}

/**
 * Every refusal code of the key check with its answer: the built-in ones and those extensions declared
 * so far. docs/errors.md lists the built-in ones (src/readme-error-table.spec.ts checks it), an
 * extension's README.md its own (its test checks that, as examples/extensions/maintenance-window/ does).
 */
export function accessDenialCodes(): ReadonlyMap<DenialCode, DenialResponse> {
  return new Map<DenialCode, DenialResponse>([...Object.entries(DENIAL_RESPONSES), ...extensionResponses]);
}

/** The refusal codes extensions declared so far (POST /v1/keys/verify may answer them too). */
export function extensionDenialCodes(): string[] {
  return [...extensionResponses.keys()];
}

export function denialResponseOf(code: DenialCode): DenialResponse {
  const response = DENIAL_RESPONSES[code as AccessDenialCode] ?? extensionResponses.get(code);
  // A step returning an undeclared code is a wiring bug; refusing is still the safe answer.
  return response ?? { status: HttpStatus.FORBIDDEN, audited: false };
}

/** Headers every refusal with that status carries. */
const HEADERS_BY_STATUS: Partial<Record<HttpStatus, Record<string, string>>> = {
  [HttpStatus.UNAUTHORIZED]: { 'WWW-Authenticate': 'Bearer' },
};

/** The HTTP answer to a denial, as the problem filter will write it. */
export function denialException(denial: AccessDenial): ProblemException {
  const { status } = denialResponseOf(denial.code);
  return new ProblemException(
    status,
    denial.code,
    denial.detail,
    { ...denial.problemFields },
    { ...HEADERS_BY_STATUS[status], ...denial.headers },
  );
}
