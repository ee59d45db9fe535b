import { HttpException, Injectable } from '@nestjs/common';
import { AuditService, RequestOrigin } from '../audit/audit.service';
import { originOf } from '../audit/request-origin.decorator';
import { translateError } from '../common/domain-error';
import { MetricsService } from '../metrics/metrics.service';
import { CountedKey, UsageCounter } from '../usage/usage-counter';
import { USAGE_MEASURES } from '../usage/usage-measures';
import { ProblemException } from '../common/problem';
import type { AccessAttempt } from './access-attempt';
import type { Principal } from './principal';
import { AccessDenial, denialException, denialResponseOf } from './access-denial';

/**
 * The one place the outcome of the key check is recorded: the key-check counter by outcome (metrics),
 * the key's usage (every request whose key resolved, allowed or refused by reason), and a
 * `key.denied` audit entry for the refusals operators look for (coalesced per key, reason and window
 * by the audit service). `refuse` returns the exception to throw; `failed` records a check that ended
 * in an error rather than a decision.
 */
@Injectable()
export class DenialRecorder {
  /** Exceptions `refuse` made: already recorded when they reach `failed` on their way out. */
  private readonly recorded = new WeakSet<object>();

  constructor(
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly usage: UsageCounter,
  ) {}

  refuse(attempt: AccessAttempt, denial: AccessDenial): ProblemException {
    const exception = this.record(attempt, denial);
    this.recorded.add(exception);
    return exception;
  }

  /**
   * A step threw instead of deciding (a dependency down: 503 `rate_limiter_unavailable` with Redis
   * down in closed mode, `database_unavailable`): the request is still answered, so the key-check
   * metric and, once the key resolved, its usage count it under the code the client gets. No
   * `key.denied` entry: the key was not refused. Returns the error, to be rethrown as it is.
   */
  failed({ request }: AccessAttempt, error: unknown): unknown {
    if (typeof error === 'object' && error !== null && this.recorded.has(error)) return error;
    this.countOutcome(request, outcomeOf(error));
    return error;
  }

  private record({ request }: AccessAttempt, denial: AccessDenial): ProblemException {
    // A key refused before it resolved (expired, revoked, disabled) still names whose usage it is.
    if (!this.countOutcome(request, denial.code) && denial.subject)
      this.usage.count(denial.subject.organizationId, denial.subject.key, denial.code);
    const keyId = request.principal?.apiKeyId;
    if (keyId && denialResponseOf(denial.code).audited) {
      this.audit.recordDenial({
        organizationId: request.principal!.organizationId,
        keyId,
        reason: denial.code,
        actor: { type: 'api_key', id: keyId },
        origin: originOf(request),
        details: { ...denial.auditDetails },
      });
    }
    return denialException(denial);
  }

  /**
   * A key another service verified (POST /v1/keys/verify) and the key check's rules refused: counted in
   * the key's usage under its code, and audited as `key.denied` as a request of it refused here would
   * be, from the caller's address the service reported; `verifiedBy` names the service's credential.
   */
  refusedVerification(
    key: CountedKey & { organizationId: string },
    denial: AccessDenial,
    origin: RequestOrigin,
    verifiedBy: string | null,
  ): void {
    this.usage.count(key.organizationId, key, denial.code);
    if (!denialResponseOf(denial.code).audited) return;
    this.audit.recordDenial({
      organizationId: key.organizationId,
      keyId: key.id,
      reason: denial.code,
      actor: { type: 'api_key', id: key.id },
      origin,
      details: { ...denial.auditDetails, verified_by: verifiedBy },
    });
  }

  allow({ request }: AccessAttempt): void {
    this.countOutcome(request, 'allowed');
    // The request's credit, for the usage buckets' credits_spent (checked after countOutcome: a key).
    if (request.creditSpent)
      this.usage.count(
        request.principal!.organizationId,
        request.principal!.key!,
        USAGE_MEASURES.creditsSpent,
      );
  }

  /**
   * The key-check metric and, once the key (or the OAuth token's grant) resolved, its usage (under the
   * identity its record names); whether it had a key or grant to count.
   */
  private countOutcome(request: AccessAttempt['request'], outcome: string): boolean {
    this.metrics.recordKeyCheck(outcome);
    const principal = request.principal;
    const counted = principal && countedOf(principal);
    if (!counted) return false;
    this.usage.count(principal.organizationId, counted, outcome);
    return true;
  }
}

/**
 * Whose usage a request counts in: its key (a task token's: the creating key), or for an OAuth access
 * token its grant, under the grant's `grant_…` id and no identity (the same counters, so a token's
 * requests cost no more than a key's and are exact across instances the same way).
 */
function countedOf(principal: Principal): CountedKey | undefined {
  if (principal.key) return principal.key;
  return principal.oauth && { id: principal.oauth.grantId, identity: null };
}

/** The `code` the problem filter will answer for an error thrown during the key check. */
function outcomeOf(error: unknown): string {
  if (error instanceof ProblemException) return error.code;
  const domain = translateError(error);
  if (domain) return domain.code;
  // Nest's own exceptions (an extension's policy may throw one) are answered by their status.
  if (error instanceof HttpException) return `http_${error.getStatus()}`;
  return 'internal_error';
}
