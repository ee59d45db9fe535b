import { ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ThrottlerGuard, type ThrottlerLimitDetail } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { accessAttempt } from '../access-attempt';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import { DenialRecorder } from '../denial-recorder';
import { ConcurrencyStep } from '../steps/concurrency.step';

/**
 * Global guard 3 of 3 (see access-check.ts): rate limit, then concurrency, for requests made with an
 * API key. The rate limit is @nestjs/throttler's own loop, customised only through its documented
 * hooks: the throttlers' limits resolve from the key (rate-limits.module.ts), `getTracker` and
 * `generateKey` count per key across all routes, `throwThrottlingException` turns a spent window into
 * our denial. `@Throttle()`/`@SkipThrottle()` on a route keep their documented meaning.
 */
@Injectable()
export class KeyThrottlerGuard extends ThrottlerGuard {
  static readonly steps = ['rate_limit', 'concurrency'] as const;

  // Property injection: ThrottlerGuard's constructor parameters are its own.
  @Inject(DenialRecorder) private readonly denials: DenialRecorder;
  @Inject(ConcurrencyStep) private readonly concurrency: ConcurrencyStep;

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const attempt = accessAttempt(context);
    // Public routes reach here without a principal; access tokens are not rate-limited (sign-in is).
    if (!attempt.request.principal) return true;
    await super.canActivate(context);
    const denial = await this.concurrency.check(attempt);
    if (denial) throw this.denials.refuse(attempt, denial);
    this.denials.allow();
    return true;
  }

  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    return !context.switchToHttp().getRequest<Request>().principal?.key;
  }

  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    return (req as unknown as Request).principal!.key!.id;
  }

  protected override generateKey(_context: ExecutionContext, tracker: string, name: string): string {
    return `${name}:${tracker}`;
  }

  /** Plain `setHeader`: Express's `res.header()` also parses for a content type, on every call. */
  protected override setResponseHeader(
    res: Record<string, unknown>,
    name: string,
    value: string | number,
  ): void {
    (res as unknown as Response).setHeader(name, value);
  }

  protected override async throwThrottlingException(
    context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    throw this.denials.refuse(accessAttempt(context), rateLimitDenial(detail));
  }
}

/** A spent window, reported with its budget (Remaining 0) under the throttler's header suffix. */
function rateLimitDenial(detail: ThrottlerLimitDetail): AccessDenial {
  // generateKey above makes the storage key `${name}:${tracker}`.
  const name = detail.key.slice(0, detail.key.indexOf(':'));
  const suffix = name === 'default' ? '' : `-${name}`;
  const windowSeconds = Math.round(detail.ttl / 1000);
  return new AccessDenial(
    AccessDenialCode.RateLimited,
    `Rate limit of ${detail.limit} requests per ${windowSeconds} s exceeded; retry later.`,
    {
      'Retry-After': String(detail.timeToBlockExpire),
      [`X-RateLimit-Limit${suffix}`]: String(detail.limit),
      [`X-RateLimit-Remaining${suffix}`]: '0',
      [`X-RateLimit-Reset${suffix}`]: String(detail.timeToExpire),
    },
    { limit: detail.limit, window_seconds: windowSeconds },
  );
}
