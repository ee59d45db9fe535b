import { ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ThrottlerGuard, type ThrottlerLimitDetail, type ThrottlerOptions } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { accessAttempt } from '../access-attempt';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import { DenialRecorder } from '../denial-recorder';
import { ConcurrencyStep } from '../steps/concurrency.step';
import { CreditsStep } from '../steps/credits.step';

/**
 * Global guard 3 of 3 (see access-check.ts): rate limit, credits, then concurrency, for requests made
 * with an API key. Access tokens and public routes pass (sign-in has its own limiter).
 *
 * The rate limit is @nestjs/throttler's, through its subclassing API: the windows are the named
 * throttlers configured in rate-limits.module.ts (per minute and per hour, limits resolved from the
 * key), each counted by the library's own `handleRequest` in the configured `ThrottlerStorage` (memory,
 * or Redis shared by every instance), with its `X-RateLimit-*` headers; `getTracker` and `generateKey`
 * count per key across all routes; `throwThrottlingException` turns a spent window into our denial.
 *
 * What the base `canActivate` adds and this guard leaves out is the per-route loop: twelve metadata
 * reads and eight awaits per request (two windows) to find `@Throttle()`/`@SkipThrottle()` overrides.
 * A key's budget is the key's, not the route's, and no route declares either; on this path it cost 4.6
 * points of the verify benchmark (README, "Performance"). A rule for one route is an access policy
 * (README, "Extending"); another window for every key is one more named throttler.
 */
@Injectable()
export class KeyThrottlerGuard extends ThrottlerGuard {
  static readonly steps = ['rate_limit', 'credits', 'concurrency'] as const;

  // Property injection: ThrottlerGuard's constructor parameters are its own.
  @Inject(DenialRecorder) private readonly denials: DenialRecorder;
  @Inject(ConcurrencyStep) private readonly concurrency: ConcurrencyStep;
  @Inject(CreditsStep) private readonly credits: CreditsStep;

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    try {
      return await this.checkKey(context);
    } catch (error) {
      // Redis down in closed mode (503 rate_limiter_unavailable), the database failing under credits:
      // the request is answered all the same, so its key's usage counts it (refusals pass through).
      throw this.denials.failed(accessAttempt(context), error);
    }
  }

  private async checkKey(context: ExecutionContext): Promise<boolean> {
    const attempt = accessAttempt(context);
    if (!attempt.request.principal) return true;
    const key = attempt.request.principal.key;
    if (key) {
      for (const throttler of this.throttlers) await this.countWindow(context, throttler);
      if (key.credits) {
        const refused = await this.credits.check(attempt);
        if (refused) throw this.denials.refuse(attempt, refused);
      }
    }
    const denial = await this.concurrency.check(attempt);
    if (denial) {
      // Refused after its credit was spent: the contract says a refused request spends nothing.
      if (key?.credits) await this.credits.refund(attempt);
      throw this.denials.refuse(attempt, denial);
    }
    this.denials.allow(attempt);
    return true;
  }

  /** One window of the key: the library's handleRequest, with the throttler's limit and ttl resolved. */
  private async countWindow(context: ExecutionContext, throttler: ThrottlerOptions): Promise<void> {
    const limit = await resolveOption(throttler.limit, context);
    const ttl = await resolveOption(throttler.ttl, context);
    await this.handleRequest({
      context,
      limit,
      ttl,
      throttler,
      blockDuration: ttl,
      getTracker: this.commonOptions.getTracker!,
      generateKey: this.commonOptions.generateKey!,
    });
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

/** A throttler's `limit` or `ttl`: a number, or a function of the request (rate-limits.module.ts). */
function resolveOption(
  option: ThrottlerOptions['limit'],
  context: ExecutionContext,
): number | Promise<number> {
  return typeof option === 'function' ? option(context) : option;
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
