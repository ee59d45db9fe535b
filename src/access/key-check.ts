import { Injectable } from '@nestjs/common';
import type { AccessAttempt, StepOutcome } from './access-attempt';
import { AccessPolicies } from './access-policy';
import { ConcurrencyStep } from './steps/concurrency.step';
import { CredentialStep } from './steps/credential.step';
import { CreditsStep } from './steps/credits.step';
import { PermissionStep } from './steps/permission.step';
import { RateLimitStep } from './steps/rate-limit.step';
import { RestrictionsStep } from './steps/restrictions.step';

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
 * A step that decides without I/O answers directly, a pending one with a promise: `await` takes either.
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
  ) {}

  /** Every step, in order: what POST /v1/keys/verify (and any other face that is not HTTP's guards) runs. */
  async whole(attempt: AccessAttempt): Promise<StepOutcome> {
    return (await this.identify(attempt)) ?? (await this.authorize(attempt)) ?? this.meter(attempt);
  }

  /** Who is calling, and from where (ApiKeyGuard). */
  async identify(attempt: AccessAttempt): Promise<StepOutcome> {
    // 1. credential: exactly one access token, API key or task token -> request.principal; 401 when
    //    none, malformed, unknown, expired, revoked or disabled (verify: the body's key, looked up among
    //    the caller's organization's keys only).
    const unidentified = await this.credential.check(attempt);
    if (unidentified) return unidentified;

    // 2. restrictions: the key's allowed_ips and allowed_referrers, 403 (verify: the body's ip, referrer).
    return this.restrictions.check(attempt);
  }

  /** What the caller may do here (RolesGuard). */
  async authorize(attempt: AccessAttempt): Promise<StepOutcome> {
    // 3. permission: the route's @RequirePermissions against the principal's, 403 (verify: the body's
    //    permission query against the key's).
    const forbidden = this.permission.check(attempt);
    if (forbidden) return forbidden;

    // 4. policies: the extensions' @AccessPolicy({ order }) steps, by order then class name
    //    (access-policy.ts); each answers with a refusal code of its own.
    return this.policies.check(attempt);
  }

  /** What the use costs, and whether the key may spend it now (KeyThrottlerGuard). */
  async meter(attempt: AccessAttempt): Promise<StepOutcome> {
    // 5. rate limit: @nestjs/throttler's windows of the key, then its identity's (rate-limits.module.ts),
    //    429 with Retry-After. Only API keys count; access and task tokens pass.
    const limited = await this.rateLimit.check(attempt);
    if (limited) return limited;

    // 6. credits: one credit of the key's balance and of its identity's, when they have one (verify: its
    //    `cost`), all or none; 429 credits_exhausted.
    const unpaid = await this.credits.check(attempt);
    if (unpaid) return unpaid;

    // 7. concurrency: the key's requests in flight, 429 (verify: the verify call holds the verified key's
    //    slot while it lasts). A refusal here, or a failure, gives step 6's credits back: a refused request
    //    spends nothing.
    let busy: StepOutcome;
    try {
      busy = this.concurrency.check(attempt);
    } catch (error) {
      await this.credits.giveBack(attempt).catch(() => undefined); // the step's failure is the one to tell
      throw error;
    }
    if (busy) await this.credits.giveBack(attempt);
    return busy;
  }
}
