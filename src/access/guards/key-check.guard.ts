import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AccessAttempt, accessAttempt, StepOutcome } from '../access-attempt';
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

  /** This guard's part of the key check. */
  protected abstract part(attempt: AccessAttempt): Promise<StepOutcome>;

  /** Whether this guard's part is the check's last: a request it lets through is allowed. */
  protected abstract readonly completes: boolean;

  canActivate(context: ExecutionContext): true | Promise<true> {
    if (this.isPublic.get(context)) return true;
    return this.checked(accessAttempt(context));
  }

  private async checked(attempt: AccessAttempt): Promise<true> {
    let denial: StepOutcome;
    try {
      denial = await this.part(attempt);
    } catch (error) {
      throw this.denials.failed(attempt, error);
    }
    if (denial) throw this.denials.refuse(attempt, denial);
    if (this.completes) this.denials.allow(attempt);
    return true;
  }
}
