import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { AccessAttempt } from '../access-attempt';
import { DenialRecorder } from '../denial-recorder';
import { KeyCheck } from '../key-check';
import { KeyCheckGuard } from './key-check.guard';

/**
 * Global guard 3 of 3 (GLOBAL_GUARDS, access.module.ts): KeyCheck.meter, the rate limit, credits and
 * concurrency. A request that passes this guard has passed the whole check. Public routes pass.
 */
@Injectable()
export class KeyThrottlerGuard extends KeyCheckGuard {
  constructor(
    reflector: Reflector,
    denials: DenialRecorder,
    private readonly check: KeyCheck,
  ) {
    super(reflector, denials, true);
  }

  protected part(attempt: AccessAttempt) {
    return this.check.meter(attempt);
  }
}
