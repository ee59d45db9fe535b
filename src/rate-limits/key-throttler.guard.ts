import { ExecutionContext, HttpStatus, Inject, Injectable } from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { AuditService } from '../audit/audit.service';
import { originOf } from '../audit/request-origin.decorator';
import { ProblemException } from '../common/problem';

type ThrottlerLimitDetail = Parameters<ThrottlerGuard['throwThrottlingException']>[1];

/**
 * Fourth global guard: per-key rate limits on @nestjs/throttler. The throttlers ("default" = per
 * minute, "hour") take their limits from the key (or the configured defaults) and count per key
 * across all routes. Access tokens and public routes are not limited here (sign-in has its own).
 */
@Injectable()
export class KeyThrottlerGuard extends ThrottlerGuard {
  // Property injection: ThrottlerGuard's constructor parameters are its own.
  @Inject(AuditService) private readonly audit: AuditService;

  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    return !context.switchToHttp().getRequest<Request>().principal?.key;
  }

  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    return (req as unknown as Request).principal!.key!.id;
  }

  /** Plain Node header writes: express's `res.header` charset handling is not needed for numbers. */
  protected override setResponseHeader(
    res: Record<string, unknown>,
    name: string,
    value: string | number,
  ): void {
    (res as unknown as Response).setHeader(name, String(value));
  }

  protected override generateKey(_context: ExecutionContext, tracker: string, name: string): string {
    return `${name}:${tracker}`;
  }

  protected override async throwThrottlingException(
    context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    const request = context.switchToHttp().getRequest<Request>();
    const principal = request.principal!;
    this.audit.recordDenial({
      organizationId: principal.organizationId,
      keyId: principal.apiKeyId!,
      reason: 'rate_limited',
      actor: { type: 'api_key', id: principal.apiKeyId },
      origin: originOf(request),
      details: { limit: detail.limit, window_seconds: Math.round(detail.ttl / 1000) },
    });
    // The refusal reports the spent budget too (Remaining 0), under the throttler's own suffix, as
    // accepted responses do: the key generated above is `${name}:${tracker}`.
    const name = detail.key.slice(0, detail.key.indexOf(':'));
    const suffix = name === 'default' ? '' : `-${name}`;
    throw new ProblemException(
      HttpStatus.TOO_MANY_REQUESTS,
      'rate_limited',
      `Rate limit of ${detail.limit} requests per ${Math.round(detail.ttl / 1000)} s exceeded; retry later.`,
      {},
      {
        'Retry-After': String(detail.timeToBlockExpire),
        [`X-RateLimit-Limit${suffix}`]: String(detail.limit),
        [`X-RateLimit-Remaining${suffix}`]: '0',
        [`X-RateLimit-Reset${suffix}`]: String(detail.timeToExpire),
      },
    );
  }
}
