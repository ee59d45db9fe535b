import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { KeyCheck } from '../key-check';
import { DenialRecorder } from '../denial-recorder';
import { KeyCheckGuard } from './key-check.guard';

/** Global guard 2 of 3 (see access-check.ts): permission, then the extensions' access policies. */
@Injectable()
export class RolesGuard extends KeyCheckGuard {
  static readonly steps = ['permission', 'policies'] as const;

  constructor(reflector: Reflector, denials: DenialRecorder, check: KeyCheck) {
    super(reflector, denials, check, RolesGuard.steps);
  }
}
