import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AccessSteps } from '../access-steps';
import { DenialRecorder } from '../denial-recorder';
import { StepGuard } from './step-guard';

/** Global guard 2 of 3 (see access-check.ts): permission, then the extensions' access policies. */
@Injectable()
export class RolesGuard extends StepGuard {
  static readonly steps = ['permission', 'policies'] as const;

  constructor(reflector: Reflector, denials: DenialRecorder, steps: AccessSteps) {
    super(reflector, denials, steps, RolesGuard.steps);
  }
}
