import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { InjectThrottlerStorage, ThrottlerStorage } from '@nestjs/throttler';
import type { Request } from 'express';
import { ConfigOf } from '../config/config-namespace';
import { leakedKeysConfig } from '../config/namespaces';
import { SecretScanningError, SecretScanningErrorCode } from './secret-scanning.errors';

const WINDOW_MS = 60_000;
const THROTTLER_NAME = 'credential-revoke';

/**
 * POST /v1/credentials/revoke per client address: CREDENTIAL_REVOKE_REQUESTS_PER_MINUTE calls, counted
 * in the rate limits' own ThrottlerStorage (Redis when configured, so across every instance) under a
 * name of its own. A guard, so a refused call costs no body validation or lookup; the route is public,
 * so the key check's per-key windows never see it.
 */
@Injectable()
export class RevokeRateLimitGuard implements CanActivate {
  constructor(
    @InjectThrottlerStorage() private readonly storage: ThrottlerStorage,
    @Inject(leakedKeysConfig.KEY) private readonly config: ConfigOf<typeof leakedKeysConfig>,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const limit = this.config.revokeRequestsPerMinute;
    const count = await this.storage.increment(
      `address:${request.ip ?? 'unknown'}`,
      WINDOW_MS,
      limit,
      0,
      THROTTLER_NAME,
    );
    if (count.totalHits > limit) {
      throw new SecretScanningError(
        SecretScanningErrorCode.TooManyRevokeRequests,
        `At most ${limit} reports a minute are taken from one address; try again later.`,
        { retryAfterSeconds: Math.max(1, Math.ceil(count.timeToExpire)) },
      );
    }
    return true;
  }
}
