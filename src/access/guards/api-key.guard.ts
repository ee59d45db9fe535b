import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { DenialRecorder } from '../denial-recorder';
import { CredentialStep } from '../steps/credential.step';
import { RestrictionsStep } from '../steps/restrictions.step';
import { StepGuard } from './step-guard';

/** Global guard 1 of 3 (see access-check.ts): credential, then restrictions. Public routes pass. */
@Injectable()
export class ApiKeyGuard extends StepGuard {
  static readonly steps = ['credential', 'restrictions'] as const;

  constructor(
    reflector: Reflector,
    denials: DenialRecorder,
    credential: CredentialStep,
    restrictions: RestrictionsStep,
  ) {
    super(reflector, denials, [credential, restrictions]);
  }
}
