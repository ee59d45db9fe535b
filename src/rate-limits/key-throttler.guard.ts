import { ExecutionContext, HttpStatus, Inject, Injectable } from '@nestjs/common';
import { ThrottlerGuard, type ThrottlerOptions } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { AuditService } from '../audit/audit.service';
import { originOf } from '../audit/request-origin.decorator';
import { ProblemException } from '../common/problem';
import { isSyncThrottlerStorage, type WindowCount } from './fixed-window.storage';

type ThrottlerLimitDetail = Parameters<ThrottlerGuard['throwThrottlingException']>[1];

/** One throttler's window for this request: its name, and the limit and length the key gives it. */
interface Budget {
  name: string;
  limit: number;
  ttl: number;
}

/** Metadata that `@Throttle()`, `@SkipThrottle()` and friends leave on a route or controller. */
const THROTTLER_METADATA_PREFIX = 'THROTTLER:';

/**
 * Fourth global guard: per-key rate limits on @nestjs/throttler. The throttlers ("default" = per
 * minute, "hour") take their limits from the key (or the configured defaults) and count per key
 * across all routes. Access tokens and public routes are not limited here (sign-in has its own).
 *
 * This guard runs on every API-key request, so the common case takes a short path: routes without
 * throttler decorators need no Reflector lookups, and with the in-memory storage the whole check is
 * synchronous (no promise per throttler). A route that does carry `@Throttle()`/`@SkipThrottle()`
 * goes through the library's own `canActivate`, so those decorators keep their documented meaning.
 */
@Injectable()
export class KeyThrottlerGuard extends ThrottlerGuard {
  // Property injection: ThrottlerGuard's constructor parameters are its own.
  @Inject(AuditService) private readonly audit: AuditService;

  /** Per handler: does it or its controller carry throttler metadata? Handlers are static. */
  private readonly decorated = new WeakMap<object, boolean>();

  // Declared as the base class's Promise<boolean>, but may return a plain boolean: Nest's guard runner
  // accepts either (CanActivate), and a plain boolean spares a promise per request.
  override canActivate(context: ExecutionContext): Promise<boolean> {
    return this.check(context) as Promise<boolean>;
  }

  private check(context: ExecutionContext): boolean | Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const key = request.principal?.key;
    if (!key) return true;
    if (this.hasThrottlerMetadata(context)) return super.canActivate(context);
    const budgets: Budget[] = [];
    for (const throttler of this.throttlers) {
      const limit = this.resolveNumber(throttler.limit, context);
      const ttl = this.resolveNumber(throttler.ttl, context);
      // A limit that resolves asynchronously is the library's business, not the short path's.
      if (limit === undefined || ttl === undefined) return super.canActivate(context);
      budgets.push({ name: throttler.name!, limit, ttl });
    }
    return this.countFrom(budgets, 0, context, key.id);
  }

  /**
   * Counts the request against each throttler in order (shortest window first), from `index` on.
   * Stays synchronous while the storage answers synchronously; otherwise continues asynchronously.
   */
  private countFrom(
    budgets: Budget[],
    index: number,
    context: ExecutionContext,
    tracker: string,
  ): boolean | Promise<boolean> {
    const storage = this.storageService;
    for (let i = index; i < budgets.length; i++) {
      const budget = budgets[i];
      const storageKey = this.generateKey(context, tracker, budget.name);
      if (isSyncThrottlerStorage(storage)) {
        this.apply(
          context,
          budget,
          storageKey,
          tracker,
          storage.incrementNow(storageKey, budget.ttl, budget.limit, budget.name),
        );
        continue;
      }
      return storage
        .increment(storageKey, budget.ttl, budget.limit, budget.ttl, budget.name)
        .then((count) => {
          this.apply(context, budget, storageKey, tracker, count);
          return this.countFrom(budgets, i + 1, context, tracker);
        });
    }
    return true;
  }

  /** Writes the budget headers, or refuses with 429 once the window is spent. */
  private apply(
    context: ExecutionContext,
    { name, limit, ttl }: Budget,
    storageKey: string,
    tracker: string,
    count: WindowCount,
  ): void {
    if (count.isBlocked) {
      throw this.refusal(context, {
        limit,
        ttl,
        key: storageKey,
        tracker,
        totalHits: count.totalHits,
        timeToExpire: count.timeToExpire,
        isBlocked: true,
        timeToBlockExpire: count.timeToBlockExpire,
      });
    }
    const res = context.switchToHttp().getResponse<Response>();
    const suffix = name === 'default' ? '' : `-${name}`;
    res.setHeader(`${this.headerPrefix}-Limit${suffix}`, String(limit));
    res.setHeader(`${this.headerPrefix}-Remaining${suffix}`, String(Math.max(0, limit - count.totalHits)));
    res.setHeader(`${this.headerPrefix}-Reset${suffix}`, String(count.timeToExpire));
  }

  /** A throttler value that is a number, or a function of the request returning one (ours are). */
  private resolveNumber(value: ThrottlerOptions['limit'], context: ExecutionContext): number | undefined {
    const resolved = typeof value === 'function' ? value(context) : value;
    return typeof resolved === 'number' ? resolved : undefined;
  }

  private hasThrottlerMetadata(context: ExecutionContext): boolean {
    const handler = context.getHandler();
    let decorated = this.decorated.get(handler);
    if (decorated === undefined) {
      const keys = [...Reflect.getMetadataKeys(handler), ...Reflect.getMetadataKeys(context.getClass())];
      decorated = keys.some((key) => typeof key === 'string' && key.startsWith(THROTTLER_METADATA_PREFIX));
      this.decorated.set(handler, decorated);
    }
    return decorated;
  }

  // The overrides below serve the library's own path (decorated routes).

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
    throw this.refusal(context, detail);
  }

  /** The 429 for a spent window, after a (coalesced) `key.denied` audit entry. */
  private refusal(context: ExecutionContext, detail: ThrottlerLimitDetail): ProblemException {
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
    return new ProblemException(
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
