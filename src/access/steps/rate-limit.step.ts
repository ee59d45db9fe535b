import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, type ThrottlerLimitDetail, type ThrottlerOptions } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import type { AccessAttempt, AccessStep, StepOutcome } from '../access-attempt';
import { AccessDenial, AccessDenialCode } from '../access-denial';

/**
 * Step 4, rate limit: the key's windows, for requests made with an API key (access tokens pass).
 *
 * The limit is @nestjs/throttler's, through its documented subclassing API (the step is a ThrottlerGuard
 * subclass provided as a step, not registered as a guard): the windows are the named throttlers
 * configured in rate-limits.module.ts (per minute and per hour, limits resolved from the key), each
 * counted by the library's own `handleRequest` in the configured `ThrottlerStorage` (memory, or Redis
 * shared by every instance), with its `X-RateLimit-*` headers; `getTracker` and `generateKey` count per
 * key across all routes; `throwThrottlingException` turns a spent window into this step's denial.
 *
 * What the base `canActivate` adds and this step leaves out is the per-route loop: twelve metadata
 * reads and eight awaits per request (two windows) to find `@Throttle()`/`@SkipThrottle()` overrides.
 * A key's budget is the key's, not the route's, and no route declares either; on this path it cost 4.6
 * points of the verify benchmark (README, "Performance"). A rule for one route is an access policy
 * (README, "Extending"); another window for every key is one more named throttler.
 */
@Injectable()
export class RateLimitStep extends ThrottlerGuard implements AccessStep {
  check({ context, request }: AccessAttempt): StepOutcome | Promise<StepOutcome> {
    if (!request.principal?.key) return undefined;
    return this.countWindows(context);
  }

  private async countWindows(context: ExecutionContext): Promise<StepOutcome> {
    try {
      for (const throttler of this.throttlers) await this.countWindow(context, throttler);
    } catch (error) {
      if (error instanceof SpentWindow) return error.denial;
      throw error;
    }
    return undefined;
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

  /** handleRequest's way out of a spent window; countWindows turns it into the step's answer. */
  protected override async throwThrottlingException(
    _context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    throw new SpentWindow(rateLimitDenial(detail));
  }
}

/** Thrown through handleRequest and caught by countWindows only; never leaves the step. */
class SpentWindow {
  constructor(readonly denial: AccessDenial) {}
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
