import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { KeyCheck } from '../key-check';
import { DenialRecorder } from '../denial-recorder';
import { KeyCheckGuard } from './key-check.guard';

/** Global guard 1 of 3 (see access-check.ts): credential, then restrictions. Public routes pass. */
@Injectable()
export class ApiKeyGuard extends KeyCheckGuard {
  static readonly steps = ['credential', 'restrictions'] as const;

  constructor(reflector: Reflector, denials: DenialRecorder, check: KeyCheck) {
    super(reflector, denials, check, ApiKeyGuard.steps);
  }
}
