import { CanActivate, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AccessAttempt, AccessStep, accessAttempt, isPending, StepOutcome } from '../access-attempt';
import type { AccessStepName } from '../access-check';
import { AccessDenial } from '../access-denial';
import { AccessSteps, StepShare } from '../access-steps';
import { DenialRecorder } from '../denial-recorder';
import { RouteMetadataCache } from '../route-metadata';
import { IS_PUBLIC } from '../route-access.decorators';

/**
 * A global guard that runs its share of the key check's steps (ACCESS_STEPS, by name), in order, on
 * every protected route. It stays synchronous while the steps answer directly and awaits only a step
 * that is pending, so a check without I/O costs no turn of the event loop. A refusal or a failure runs
 * the `undo` of the steps before it; the guard whose share ends the check records the request allowed.
 */
export abstract class StepGuard implements CanActivate {
  private readonly isPublic: RouteMetadataCache<boolean>;
  private readonly share: StepShare;

  protected constructor(
    reflector: Reflector,
    private readonly denials: DenialRecorder,
    steps: AccessSteps,
    names: readonly AccessStepName[],
  ) {
    this.isPublic = new RouteMetadataCache(reflector, IS_PUBLIC);
    this.share = steps.share(names);
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (this.isPublic.get(context)) return true;
    const attempt = accessAttempt(context);
    const steps = this.share.steps;
    for (let i = 0; i < steps.length; i++) {
      let outcome: StepOutcome | Promise<StepOutcome>;
      try {
        outcome = steps[i].check(attempt);
      } catch (error) {
        return this.fail(attempt, i, error);
      }
      if (isPending(outcome)) return this.resume(attempt, i, outcome);
      if (outcome) return this.refuse(attempt, i, outcome);
    }
    return this.pass(attempt);
  }

  /** The rest of the share once step `index` is pending. */
  private async resume(
    attempt: AccessAttempt,
    index: number,
    pending: Promise<StepOutcome>,
  ): Promise<boolean> {
    const steps = this.share.steps;
    let i = index;
    let outcome: StepOutcome;
    try {
      outcome = await pending;
      while (!outcome) {
        if (++i === steps.length) return this.pass(attempt);
        const next = steps[i].check(attempt);
        outcome = isPending(next) ? await next : next;
      }
    } catch (error) {
      return this.fail(attempt, i, error);
    }
    return this.refuse(attempt, i, outcome);
  }

  private pass(attempt: AccessAttempt): true {
    if (this.share.completes) this.denials.allow(attempt);
    return true;
  }

  /** Step `index` refused: earlier steps give back what they took, then the refusal is recorded. */
  private refuse(attempt: AccessAttempt, index: number, denial: AccessDenial): never | Promise<never> {
    const undo = this.share.undo[index];
    if (!undo.length) throw this.denials.refuse(attempt, denial);
    return undoThenRefuse(
      undo,
      attempt,
      () => this.denials.refuse(attempt, denial),
      (error) => this.denials.failed(attempt, error),
    );
  }

  /**
   * Step `index` threw instead of deciding (a dependency down): the request is still answered, so it
   * is counted like a refusal, and earlier steps give back what they took.
   */
  private fail(attempt: AccessAttempt, index: number, error: unknown): never | Promise<never> {
    const undo = this.share.undo[index];
    if (!undo.length) throw this.denials.failed(attempt, error);
    // The client gets the step's failure; a failing undo must not replace it with its own.
    return undoThenRefuse(
      undo,
      attempt,
      () => this.denials.failed(attempt, error),
      () => this.denials.failed(attempt, error),
    );
  }
}

async function undoThenRefuse(
  undo: readonly AccessStep[],
  attempt: AccessAttempt,
  refusal: () => unknown,
  undoFailed: (error: unknown) => unknown,
): Promise<never> {
  try {
    for (const step of undo) await step.undo!(attempt);
  } catch (error) {
    throw undoFailed(error);
  }
  throw refusal();
}
