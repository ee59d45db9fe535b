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
 * that is pending, so a check without I/O costs no turn of the event loop; a step that may start
 * alongside a pending one (AccessStep.startsAlongsidePrevious) is started before that wait, so their I/O
 * shares it. A refusal or a failure runs the `undo` of the steps before it (and of one started alongside);
 * the guard whose share ends the check records the request allowed.
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
    return this.runFrom(accessAttempt(context), 0);
  }

  /** The share's steps from `from` on: synchronously while they answer directly. */
  private runFrom(attempt: AccessAttempt, from: number): boolean | Promise<boolean> {
    const steps = this.share.steps;
    for (let i = from; i < steps.length; i++) {
      let outcome: StepOutcome | Promise<StepOutcome>;
      try {
        outcome = steps[i].check(attempt);
      } catch (error) {
        return this.fail(attempt, i, error);
      }
      if (isPending(outcome)) return this.resume(attempt, i, outcome, this.startAlongside(attempt, i));
      if (outcome) return this.refuse(attempt, i, outcome);
    }
    return this.pass(attempt);
  }

  /**
   * The step after pending step `index`, started now when it may run alongside it
   * (AccessStep.startsAlongsidePrevious); its answer is read once step `index` has let the request on.
   */
  private startAlongside(attempt: AccessAttempt, index: number): Promise<Settled> | undefined {
    const next = this.share.steps[index + 1];
    if (!next?.startsAlongsidePrevious) return undefined;
    try {
      const outcome = next.check(attempt);
      // Settled into a value at once: a failure waits here, never as an unhandled rejection.
      return isPending(outcome)
        ? outcome.then(
            (value) => ({ outcome: value }),
            (error: unknown) => ({ error }),
          )
        : Promise.resolve({ outcome });
    } catch (error) {
      return Promise.resolve({ error });
    }
  }

  /** The rest of the share once step `index` is pending (and the step after it, when started alongside). */
  private async resume(
    attempt: AccessAttempt,
    index: number,
    pending: Promise<StepOutcome>,
    alongside: Promise<Settled> | undefined,
  ): Promise<boolean> {
    let outcome: StepOutcome;
    try {
      outcome = await pending;
    } catch (error) {
      return this.fail(attempt, index, error, alongside);
    }
    if (outcome) return this.refuse(attempt, index, outcome, alongside);
    if (!alongside) return this.runFrom(attempt, index + 1);
    const next = await alongside;
    if ('error' in next) return this.fail(attempt, index + 1, next.error);
    if (next.outcome) return this.refuse(attempt, index + 1, next.outcome);
    return this.runFrom(attempt, index + 2);
  }

  private pass(attempt: AccessAttempt): true {
    if (this.share.completes) this.denials.allow(attempt);
    return true;
  }

  /**
   * Step `index` refused: earlier steps give back what they took (and the step started alongside it,
   * once settled), then the refusal is recorded.
   */
  private refuse(
    attempt: AccessAttempt,
    index: number,
    denial: AccessDenial,
    alongside?: Promise<Settled>,
  ): never | Promise<never> {
    const undo = this.undoWhenEnding(index, alongside);
    if (!undo.length) throw this.denials.refuse(attempt, denial);
    return undoThenRefuse(
      undo,
      attempt,
      alongside,
      () => this.denials.refuse(attempt, denial),
      (error) => this.denials.failed(attempt, error),
    );
  }

  /**
   * Step `index` threw instead of deciding (a dependency down): the request is still answered, so it
   * is counted like a refusal, and earlier steps give back what they took.
   */
  private fail(
    attempt: AccessAttempt,
    index: number,
    error: unknown,
    alongside?: Promise<Settled>,
  ): never | Promise<never> {
    const undo = this.undoWhenEnding(index, alongside);
    if (!undo.length) throw this.denials.failed(attempt, error);
    // The client gets the step's failure; a failing undo must not replace it with its own.
    return undoThenRefuse(
      undo,
      attempt,
      alongside,
      () => this.denials.failed(attempt, error),
      () => this.denials.failed(attempt, error),
    );
  }

  /** What to give back when step `index` ends the check: the step started alongside it first, if any. */
  private undoWhenEnding(index: number, alongside: Promise<Settled> | undefined): readonly AccessStep[] {
    const before = this.share.undo[index];
    const next = this.share.steps[index + 1];
    return alongside && next.undo ? [next, ...before] : before;
  }
}

/** A step's answer, or its failure, as a value. */
type Settled = { outcome: StepOutcome } | { error: unknown };

async function undoThenRefuse(
  undo: readonly AccessStep[],
  attempt: AccessAttempt,
  alongside: Promise<Settled> | undefined,
  refusal: () => unknown,
  undoFailed: (error: unknown) => unknown,
): Promise<never> {
  // A step started alongside is undone once it has taken what it takes.
  if (alongside) await alongside;
  try {
    for (const step of undo) await step.undo!(attempt);
  } catch (error) {
    throw undoFailed(error);
  }
  throw refusal();
}
