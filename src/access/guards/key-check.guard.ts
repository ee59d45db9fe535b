import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { type AccessAttempt, accessAttempt, type StepOutcome } from '../access-attempt';
import { DenialRecorder } from '../denial-recorder';
import { KeyCheck } from '../key-check';
import { RouteMetadataCache } from '../route-metadata';
import { IS_PUBLIC } from '../route-access.decorators';

/**
 * A global guard: a thin face over one part of the key check (KeyCheck, key-check.ts) on every protected
 * route, answered as HTTP answers: a refusal is thrown as its problem (DenialRecorder records it and
 * counts it in the key's usage), a step that failed is recorded and rethrown, and the guard whose part
 * ends the check (`completes`) records the request allowed. A guard names its part and nothing else (Nest
 * injects a subclass through this constructor).
 */
@Injectable()
export abstract class KeyCheckGuard implements CanActivate {
  private readonly isPublic: RouteMetadataCache<boolean>;

  constructor(
    reflector: Reflector,
    private readonly denials: DenialRecorder,
    protected readonly check: KeyCheck,
  ) {
    this.isPublic = new RouteMetadataCache(reflector, IS_PUBLIC);
  }

  /** This guard's part of the key check: directly when its steps answered without I/O. */
  protected abstract part(attempt: AccessAttempt): StepOutcome | Promise<StepOutcome>;

  /** Whether this guard's part is the check's last: a request it lets through is allowed. */
  protected abstract readonly completes: boolean;

  /**
   * `true` without a promise when the part answered directly: Nest awaits only what is not a boolean.
   * A refusal or a failure is thrown either way, and Nest's guard runner, async, rejects with it alike.
   */
  canActivate(context: ExecutionContext): true | Promise<true> {
    if (this.isPublic.get(context)) return true;
    const attempt = accessAttempt(context);
    let outcome: StepOutcome | Promise<StepOutcome>;
    try {
      outcome = this.part(attempt);
    } catch (error) {
      throw this.denials.failed(attempt, error);
    }
    if (outcome instanceof Promise)
      return outcome.then(
        (denial) => this.passed(attempt, denial),
        (error: unknown) => {
          throw this.denials.failed(attempt, error);
        },
      );
    return this.passed(attempt, outcome);
  }

  private passed(attempt: AccessAttempt, denial: StepOutcome): true {
    if (denial) throw this.denials.refuse(attempt, denial);
    if (this.completes) this.denials.allow(attempt);
    return true;
  }
}
