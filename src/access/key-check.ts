import { Injectable } from '@nestjs/common';
import type { AccessAttempt, StepOutcome } from './access-attempt';
import { AccessPolicies } from './access-policy';
import { ConcurrencyStep } from './steps/concurrency.step';
import { CredentialStep } from './steps/credential.step';
import { CreditsStep } from './steps/credits.step';
import { PermissionStep } from './steps/permission.step';
import { RateLimitStep } from './steps/rate-limit.step';
import { RestrictionsStep } from './steps/restrictions.step';
import { tracedStep } from './traced-step';
import { tracingOn } from '../telemetry/telemetry';

/**
 * The key check's order, as the methods of KeyCheck below run it (test/access-check.e2e-spec.ts records
 * what a real request runs and compares it with this list).
 */
export const ACCESS_STEPS = [
  'credential',
  'restrictions',
  'permission',
  'policies',
  'rate_limit',
  'credits',
  'concurrency',
] as const;

export type AccessStepName = (typeof ACCESS_STEPS)[number];

/**
 * The key check: every rule a use of a credential passes, read top to bottom in this class. Each method
 * answers `undefined` (through) or the first refusal, an AccessDenial whose code maps to its HTTP answer
 * in one status table (DENIAL_RESPONSES and defineAccessDenial, access-denial.ts); a step that cannot
 * decide (a dependency down) throws, and the face turns that into its 5xx. A refusal ends the check, so a
 * request refused early spends nothing that later steps count.
 *
 * Its faces: the three global guards run one part each, in this order (ApiKeyGuard `identify`, RolesGuard
 * `authorize`, KeyThrottlerGuard `meter`: the design asks for the three guards, and Nest runs them in
 * registration order); POST /v1/keys/verify runs `whole`, where the steps read the request the calling
 * service describes (`attempt.verification`) instead of this API's request. A new face (MCP, A2A) calls
 * `whole` too, so no rule is written twice.
 *
 * A step that decides without I/O answers directly, a pending one with a promise, and so do the parts:
 * a part whose steps all answered directly answers directly too, so its guard can answer Nest `true`
 * without a promise (Nest awaits only what is not a boolean). Each `await` of a value already known was
 * a turn of the microtask queue and a promise, three or four a guard.
 */
@Injectable()
export class KeyCheck {
  constructor(
    private readonly credential: CredentialStep,
    private readonly restrictions: RestrictionsStep,
    private readonly permission: PermissionStep,
    private readonly policies: AccessPolicies,
    private readonly rateLimit: RateLimitStep,
    private readonly credits: CreditsStep,
    private readonly concurrency: ConcurrencyStep,
  ) {
    // With tracing on (telemetry.ts), every step's check is a span of the request's trace; off, the
    // steps are called as they are.
    if (tracingOn()) {
      this.credential = tracedStep('credential', credential);
      this.restrictions = tracedStep('restrictions', restrictions);
      this.permission = tracedStep('permission', permission);
      this.policies = tracedStep('policies', policies);
      this.rateLimit = tracedStep('rate_limit', rateLimit);
      this.credits = tracedStep('credits', credits);
      this.concurrency = tracedStep('concurrency', concurrency);
    }
  }

  /** Every step, in order: what POST /v1/keys/verify (and any other face that is not HTTP's guards) runs. */
  whole(attempt: AccessAttempt): Outcome {
    return andThen(this.identify(attempt), (unidentified) =>
      unidentified
        ? unidentified
        : andThen(this.authorize(attempt), (forbidden) => forbidden ?? this.meter(attempt)),
    );
  }

  /** Who is calling, and from where (ApiKeyGuard). */
  identify(attempt: AccessAttempt): Outcome {
    // 1. credential: exactly one access token, API key or task token -> request.principal; 401 when
    //    none, malformed, unknown, expired, revoked or disabled (verify: the body's key, looked up among
    //    the caller's organization's keys only).
    // 2. restrictions: the key's allowed_ips and allowed_referrers, 403 (verify: the body's ip, referrer).
    return andThen(
      this.credential.check(attempt),
      (unidentified) => unidentified ?? this.restrictions.check(attempt),
    );
  }

  /** What the caller may do here (RolesGuard). */
  authorize(attempt: AccessAttempt): Outcome {
    // 3. permission: the route's @RequirePermissions against the principal's, 403 (verify: the body's
    //    permission query against the key's).
    const forbidden = this.permission.check(attempt);
    if (forbidden) return forbidden;

    // 4. policies: the extensions' @AccessPolicy({ order }) steps, by order then class name
    //    (access-policy.ts); each answers with a refusal code of its own.
    return this.policies.check(attempt);
  }

  /** What the use costs, and whether the key may spend it now (KeyThrottlerGuard). */
  meter(attempt: AccessAttempt): Outcome {
    // 5. rate limit: @nestjs/throttler's windows of the key, then its identity's (rate-limits.module.ts),
    //    429 with Retry-After. Only API keys count; access and task tokens pass.
    // 6. credits: one credit of the key's balance and of its identity's, when they have one (verify: its
    //    `cost`), all or none; 429 credits_exhausted.
    return andThen(this.rateLimit.check(attempt), (limited) =>
      limited ? limited : andThen(this.credits.check(attempt), (unpaid) => unpaid ?? this.admitted(attempt)),
    );
  }

  /**
   * 7. concurrency: the key's requests in flight, 429 (verify: the verify call holds the verified key's
   *    slot while it lasts). A refusal here, or a failure, gives step 6's credits back: a refused request
   *    spends nothing.
   */
  private admitted(attempt: AccessAttempt): Outcome {
    let busy: StepOutcome;
    try {
      busy = this.concurrency.check(attempt);
    } catch (error) {
      // The step's failure is the one to tell.
      return this.credits
        .giveBack(attempt)
        .catch(() => undefined)
        .then(() => Promise.reject(error as Error));
    }
    return busy ? this.credits.giveBack(attempt).then(() => busy) : undefined;
  }
}

/** A step's or a part's answer: directly when it was decided without I/O, else a promise of it. */
export type Outcome = StepOutcome | Promise<StepOutcome>;

/**
 * `next(outcome)`, at once when `outcome` is known, after it when it is pending; a step that throws
 * rejects the part's promise when one is pending, and throws when none is (the guard takes both alike).
 */
function andThen(outcome: Outcome, next: (known: StepOutcome) => Outcome): Outcome {
  return outcome instanceof Promise ? outcome.then(next) : next(outcome);
}
