import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { AccessAttempt } from '../access-attempt';
import { DenialRecorder } from '../denial-recorder';
import { KeyCheck } from '../key-check';
import { KeyCheckGuard } from './key-check.guard';

/** Global guard 1 of 3 (GLOBAL_GUARDS, access.module.ts): KeyCheck.identify. Public routes pass. */
@Injectable()
export class ApiKeyGuard extends KeyCheckGuard {
  constructor(
    reflector: Reflector,
    denials: DenialRecorder,
    private readonly check: KeyCheck,
  ) {
    super(reflector, denials, false);
  }

  protected part(attempt: AccessAttempt) {
    return this.check.identify(attempt);
  }
}
