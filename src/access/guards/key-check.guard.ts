import { CanActivate, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AccessAttempt, accessAttempt } from '../access-attempt';
import type { AccessDenial } from '../access-denial';
import { DenialRecorder } from '../denial-recorder';
import { AccessStepName, KeyCheck, KeyCheckFace, KeyCheckRun } from '../key-check';
import { RouteMetadataCache } from '../route-metadata';
import { IS_PUBLIC } from '../route-access.decorators';

/**
 * A global guard: a thin face over the key check (KeyCheck.run) that runs its share of the steps on
 * every protected route and answers as HTTP does: a refusal is thrown as its problem (DenialRecorder
 * records it), and the guard whose share ends the check records the request allowed.
 */
export abstract class KeyCheckGuard implements CanActivate {
  private readonly isPublic: RouteMetadataCache<boolean>;
  private readonly share: KeyCheckRun;
  private readonly face: KeyCheckFace<true>;

  protected constructor(
    reflector: Reflector,
    denials: DenialRecorder,
    private readonly check: KeyCheck,
    names: readonly AccessStepName[],
  ) {
    this.isPublic = new RouteMetadataCache(reflector, IS_PUBLIC);
    this.share = check.runOf(names);
    this.face = httpFace(denials, this.share.completes);
  }

  canActivate(context: ExecutionContext): true | Promise<true> {
    if (this.isPublic.get(context)) return true;
    return this.check.run(accessAttempt(context), this.share, this.face);
  }
}

/** The key check answered over HTTP: through, or the refusal's problem thrown. */
function httpFace(denials: DenialRecorder, completes: boolean): KeyCheckFace<true> {
  return {
    passed(attempt: AccessAttempt): true {
      if (completes) denials.allow(attempt);
      return true;
    },
    refused(attempt: AccessAttempt, denial: AccessDenial): never {
      throw denials.refuse(attempt, denial);
    },
    failed: (attempt, error) => denials.failed(attempt, error),
  };
}
