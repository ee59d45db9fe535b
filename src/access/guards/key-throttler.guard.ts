import { Injectable } from '@nestjs/common';
import type { AccessAttempt } from '../access-attempt';
import { KeyCheckGuard } from './key-check.guard';

/**
 * Global guard 3 of 3 (GLOBAL_GUARDS, access.module.ts): KeyCheck.meter, the rate limit, credits and
 * concurrency. A request that passes this guard has passed the whole check. Public routes pass.
 */
@Injectable()
export class KeyThrottlerGuard extends KeyCheckGuard {
  protected readonly completes = true;

  protected part(attempt: AccessAttempt) {
    return this.check.meter(attempt);
  }
}
