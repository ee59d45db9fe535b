import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AccessSteps } from '../access-steps';
import { DenialRecorder } from '../denial-recorder';
import { StepGuard } from './step-guard';

/** Global guard 1 of 3 (see access-check.ts): credential, then restrictions. Public routes pass. */
@Injectable()
export class ApiKeyGuard extends StepGuard {
  static readonly steps = ['credential', 'restrictions'] as const;

  constructor(reflector: Reflector, denials: DenialRecorder, steps: AccessSteps) {
    super(reflector, denials, steps, ApiKeyGuard.steps);
  }
}
