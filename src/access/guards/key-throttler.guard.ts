import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { KeyCheck } from '../key-check';
import { DenialRecorder } from '../denial-recorder';
import { KeyCheckGuard } from './key-check.guard';

/**
 * Global guard 3 of 3 (see access-check.ts): rate limit, credits (given back if concurrency refuses),
 * then concurrency. The first two count only requests made with an API key; access tokens pass them
 * (sign-in has its own limiter). A request that passes this guard has passed the whole check.
 */
@Injectable()
export class KeyThrottlerGuard extends KeyCheckGuard {
  static readonly steps = ['rate_limit', 'credits', 'concurrency'] as const;

  constructor(reflector: Reflector, denials: DenialRecorder, check: KeyCheck) {
    super(reflector, denials, check, KeyThrottlerGuard.steps);
  }
}
