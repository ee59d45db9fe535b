import { CanActivate, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AccessStep, accessAttempt } from '../access-attempt';
import { DenialRecorder } from '../denial-recorder';
import { RouteMetadataCache } from '../route-metadata';
import { IS_PUBLIC } from '../route-access.decorators';

/** A global guard that runs its share of the key check's steps, in order, on every protected route. */
export abstract class StepGuard implements CanActivate {
  private readonly isPublic: RouteMetadataCache<boolean>;

  protected constructor(
    reflector: Reflector,
    private readonly denials: DenialRecorder,
    private readonly steps: readonly AccessStep[],
  ) {
    this.isPublic = new RouteMetadataCache(reflector, IS_PUBLIC);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.isPublic.get(context)) return true;
    const attempt = accessAttempt(context);
    try {
      for (const step of this.steps) {
        const denial = await step.check(attempt);
        if (denial) throw this.denials.refuse(attempt, denial);
      }
    } catch (error) {
      // A step that threw (a dependency down) still answers the request: count it like a refusal.
      throw this.denials.failed(attempt, error);
    }
    return true;
  }
}
