import { Injectable } from '@nestjs/common';
import type { AccessAttempt } from '../access-attempt';
import { KeyCheckGuard } from './key-check.guard';

/** Global guard 1 of 3 (GLOBAL_GUARDS, access.module.ts): KeyCheck.identify. Public routes pass. */
@Injectable()
export class ApiKeyGuard extends KeyCheckGuard {
  protected readonly completes = false;

  protected part(attempt: AccessAttempt) {
    return this.check.identify(attempt);
  }
}
