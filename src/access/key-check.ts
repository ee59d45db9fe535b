import { Injectable } from '@nestjs/common';
import { AccessAttempt, AccessStep, isPending, StepOutcome } from './access-attempt';
import type { AccessDenial } from './access-denial';
import { AccessPolicies } from './access-policy';
import { ConcurrencyStep } from './steps/concurrency.step';
import { CredentialStep } from './steps/credential.step';
import { CreditsStep } from './steps/credits.step';
import { PermissionStep } from './steps/permission.step';
import { RateLimitStep } from './steps/rate-limit.step';
import { RestrictionsStep } from './steps/restrictions.step';

/**
 * The key check's order. The first refusal ends it, so a request refused early spends nothing that later
 * steps count. For a request to this API the steps read the request and its route; for POST
 * /v1/keys/verify (`attempt.verification`) the request another service describes:
 *
 *   1. credential    exactly one access token, API key or task token -> request.principal
 *                    (verify: the body's key, among the caller's organization's keys)
 *   2. restrictions  the key's allowed_ips and allowed_referrers (verify: the body's ip and referrer)
 *   3. permission    the route's @RequirePermissions (verify: the body's permission query)
 *   4. policies      extensions' @AccessPolicy({ order }) steps, by order then name (access-policy.ts)
 *   5. rate limit    @nestjs/throttler's windows per key, and the identity's (rate-limits.module.ts)
 *   6. credits       one credit of a key with a balance (verify: `cost`); given back if refused later
 *   7. concurrency   requests of one key in flight (verify: the verify call holds the verified key's slot)
 *
 * Every refusal is an AccessDenial whose code maps to its HTTP answer in one table (DENIAL_RESPONSES and
 * defineAccessDenial, access-denial.ts); a face decides only how it is told (KeyCheckFace).
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
 * How a face of the key check answers its outcome: the global guards let the request through or throw
 * its problem, POST /v1/keys/verify answers `valid` or `valid: false` with the code. Made once per face,
 * not per request.
 */
export interface KeyCheckFace<T> {
  /** Every step of the run let the attempt through. */
  passed(attempt: AccessAttempt): T;
  /** A step refused it (what earlier steps took is given back already). */
  refused(attempt: AccessAttempt, denial: AccessDenial): T;
  /** A step threw instead of deciding (a dependency down): the error to throw. */
  failed(attempt: AccessAttempt, error: unknown): unknown;
}

/** A run of consecutive steps of ACCESS_STEPS (a guard's share, or all of them), resolved once at start. */
export interface KeyCheckRun {
  readonly from: number;
  readonly to: number;
  /** The run ends the check: an attempt that passes it is allowed. */
  readonly completes: boolean;
}

/**
 * The key check: one engine for every face (the global guards, POST /v1/keys/verify), so a step, or a
 * policy an extension adds, applies to all of them. `run` goes down ACCESS_STEPS as written there; it
 * stays synchronous while the steps answer directly and awaits only a step that is pending, so a check
 * without I/O costs no turn of the event loop. A refusal or a failure first runs the `undo` of the steps
 * before it, latest first.
 */
@Injectable()
export class KeyCheck {
  private readonly steps: readonly AccessStep[];
  /** Per step: the steps before it that have an `undo`, latest first. */
  private readonly undo: readonly (readonly AccessStep[])[];
  /** Every step: what POST /v1/keys/verify runs. */
  readonly whole: KeyCheckRun;

  constructor(
    credential: CredentialStep,
    restrictions: RestrictionsStep,
    permission: PermissionStep,
    policies: AccessPolicies,
    rateLimit: RateLimitStep,
    credits: CreditsStep,
    concurrency: ConcurrencyStep,
  ) {
    const byName: Record<AccessStepName, AccessStep> = {
      credential,
      restrictions,
      permission,
      policies,
      rate_limit: rateLimit,
      credits,
      concurrency,
    };
    this.steps = ACCESS_STEPS.map((name) => byName[name]);
    this.undo = this.steps.map((_, i) =>
      this.steps
        .slice(0, i)
        .filter((step) => typeof step.undo === 'function')
        .reverse(),
    );
    this.whole = this.runOf(ACCESS_STEPS);
  }

  /**
   * The run of `names`, which must be consecutive steps of ACCESS_STEPS in its order: a guard asking
   * for another share fails the start rather than reorder the check.
   */
  runOf(names: readonly AccessStepName[]): KeyCheckRun {
    const from = ACCESS_STEPS.indexOf(names[0]);
    if (from < 0 || names.some((name, i) => name !== ACCESS_STEPS[from + i])) {
      throw new Error(
        `The steps [${names.join(', ')}] are not in the key check's order ` +
          `[${ACCESS_STEPS.join(', ')}] (ACCESS_STEPS in key-check.ts, GLOBAL_GUARDS in access-check.ts).`,
      );
    }
    const to = from + names.length;
    return { from, to, completes: to === ACCESS_STEPS.length };
  }

  /** The steps of `run` for `attempt`, top to bottom, answered as `face` answers. */
  run<T>(attempt: AccessAttempt, run: KeyCheckRun, face: KeyCheckFace<T>): T | Promise<T> {
    const steps = this.steps;
    for (let i = run.from; i < run.to; i++) {
      let outcome: StepOutcome | Promise<StepOutcome>;
      try {
        outcome = steps[i].check(attempt);
      } catch (error) {
        return this.fail(attempt, i, error, face);
      }
      if (isPending(outcome)) return this.resume(attempt, run, i, outcome, face);
      if (outcome) return this.refuse(attempt, i, outcome, face);
    }
    return face.passed(attempt);
  }

  /** The rest of the run once step `index` is pending. */
  private async resume<T>(
    attempt: AccessAttempt,
    run: KeyCheckRun,
    index: number,
    pending: Promise<StepOutcome>,
    face: KeyCheckFace<T>,
  ): Promise<T> {
    const steps = this.steps;
    let i = index;
    let outcome: StepOutcome;
    try {
      outcome = await pending;
      while (!outcome) {
        if (++i === run.to) return face.passed(attempt);
        const next = steps[i].check(attempt);
        outcome = isPending(next) ? await next : next;
      }
    } catch (error) {
      return this.fail(attempt, i, error, face);
    }
    return this.refuse(attempt, i, outcome, face);
  }

  /** Step `index` refused: earlier steps give back what they took, then the face answers the refusal. */
  private refuse<T>(
    attempt: AccessAttempt,
    index: number,
    denial: AccessDenial,
    face: KeyCheckFace<T>,
  ): T | Promise<T> {
    const undo = this.undo[index];
    if (!undo.length) return face.refused(attempt, denial);
    return undoThen(
      undo,
      attempt,
      () => face.refused(attempt, denial),
      (error) => face.failed(attempt, error),
    );
  }

  /**
   * Step `index` threw instead of deciding: earlier steps give back what they took, and the face's error
   * is thrown (a failing undo must not replace the step's failure with its own).
   */
  private fail<T>(
    attempt: AccessAttempt,
    index: number,
    error: unknown,
    face: KeyCheckFace<T>,
  ): never | Promise<never> {
    const undo = this.undo[index];
    if (!undo.length) throw face.failed(attempt, error);
    return undoThen(
      undo,
      attempt,
      () => {
        throw face.failed(attempt, error);
      },
      () => face.failed(attempt, error),
    );
  }
}

async function undoThen<T>(
  undo: readonly AccessStep[],
  attempt: AccessAttempt,
  then: () => T,
  undoFailed: (error: unknown) => unknown,
): Promise<T> {
  try {
    for (const step of undo) await step.undo!(attempt);
  } catch (error) {
    throw undoFailed(error);
  }
  return then();
}
