import { ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  type ThrottlerLimitDetail,
  type ThrottlerModuleOptions,
  type ThrottlerOptions,
  type ThrottlerStorage,
} from '@nestjs/throttler';
import type { Request, Response } from 'express';
import type { AccessAttempt, AccessStep, StepOutcome } from '../access-attempt';
import {
  carriesRides,
  countsWindowsTogether,
  type WindowCount,
  type WindowRide,
  type WindowToCount,
} from '../../rate-limits/window-counter';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import type { KeyContext } from '../principal';
import { CreditsStep } from './credits.step';
import { RedisConnection } from '../../redis/redis.connection';

/**
 * Step 4, rate limit: the key's windows, for requests made with an API key, or the grant's for an OAuth
 * access token (access and task tokens pass).
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
 * points of the verify benchmark (docs/benchmarks.md). A rule for one route is an access policy
 * (docs/extending.md); another window for every key is one more named throttler.
 *
 * With the storages of rate-limits.module.ts (WindowBatchCounter), the step counts all windows in one
 * call and answers what handleRequest would for each, with header names made once: the same counts,
 * headers and denials. In this process (no REDIS_URL) that call answers at once, so the check of a cached
 * key runs in one turn of the event loop; in Redis it is one round trip for all windows, not one each.
 * Another storage gets handleRequest, window by window.
 *
 * When credits are in the same Redis, that round trip also carries the next step's spend (a ride,
 * CreditsStep.rideOf): the script spends the request's credits only if every window let it through,
 * which is what running the two steps one after the other does, and the credits step settles what it
 * spent without a round trip of its own. The steps keep their order and their denials.
 */
@Injectable()
export class RateLimitStep extends ThrottlerGuard implements AccessStep {
  private headerNames?: Map<string, WindowHeaderNames>;
  private readonly storageKeys = new WeakMap<KeyContext, readonly string[]>();
  /** The storage carries the credits step's rides (Redis for both): see onModuleInit. */
  private carriesCredits = false;

  constructor(
    @InjectThrottlerOptions() options: ThrottlerModuleOptions,
    @InjectThrottlerStorage() storage: ThrottlerStorage,
    reflector: Reflector,
    private readonly credits: CreditsStep,
    private readonly redis: RedisConnection,
  ) {
    super(options, storage, reflector);
  }

  /**
   * When windows and credits are both in Redis, the windows' script carries the credits step's spend
   * (CreditsStep.rideOf): a request's windows and balances take one round trip, not one each.
   */
  override async onModuleInit(): Promise<void> {
    await super.onModuleInit();
    const riderLua = this.credits.riderLua;
    const storage: object = this.storageService;
    if (riderLua && carriesRides(storage)) {
      storage.carry(riderLua);
      this.carriesCredits = true;
    }
  }

  /**
   * A verification (POST /v1/keys/verify) spends one request of the verified key's windows, with no
   * budget headers on the response, whose headers describe the caller's own key; its credits, `cost` of
   * them, ride with it as a request's one does.
   */
  check({ context, request, response, verification }: AccessAttempt): StepOutcome | Promise<StepOutcome> {
    // An OAuth access token counts in its grant's windows; other tokens pass.
    const key = request.principal?.key ?? request.principal?.oauth?.windows;
    if (!key) return undefined;
    const ride = this.carriesCredits ? this.credits.rideOf(request, verification) : undefined;
    return this.count(context, key, verification ? WITHOUT_HEADERS : response, ride);
  }

  private count(
    context: ExecutionContext,
    key: KeyContext,
    response: Response,
    ride: WindowRide | undefined,
  ): StepOutcome | Promise<StepOutcome> {
    const storage: object = this.storageService;
    if (!countsWindowsTogether(storage)) return this.countWindows(context, key);
    const windows = this.windowsNow(context, key);
    if (!windows) return this.countWindows(context, key);
    // The identity's shared windows go in the same call as the key's: one round trip for all of them.
    this.addIdentityWindows(windows, key);
    const counts = storage.countWindows(windows, ride);
    return Array.isArray(counts)
      ? this.answer(response, windows, counts)
      : counts.then((answered) => this.answer(response, windows, answered));
  }

  /**
   * Each throttler's limit and ttl when all are known without waiting (they are functions of the key in
   * rate-limits.module.ts); undefined when one is asynchronous or user agents are exempted, which only
   * handleRequest implements.
   */
  private windowsNow(context: ExecutionContext, key: KeyContext): ResolvedWindow[] | undefined {
    if (this.commonOptions.ignoreUserAgents) return undefined;
    const tracker = key.id;
    const storageKeys = this.storageKeysOf(key);
    const windows: ResolvedWindow[] = [];
    for (let i = 0; i < this.throttlers.length; i++) {
      const throttler = this.throttlers[i];
      const limit = resolveOption(throttler.limit, context);
      const ttl = resolveOption(throttler.ttl, context);
      if (typeof limit !== 'number' || typeof ttl !== 'number' || throttler.ignoreUserAgents)
        return undefined;
      windows.push({ throttler, key: storageKeys[i], tracker, name: throttler.name!, limit, ttl });
    }
    return windows;
  }

  /**
   * The storage key of each throttler's window for `key`, made once per cached key record (a
   * KeyContext is one record's, frozen): as generateKey makes it, a function of the key's id and
   * organization and the throttler's name only, and a string kept has its hash computed once for the
   * storage's lookups.
   */
  private storageKeysOf(key: KeyContext): readonly string[] {
    let keys = this.storageKeys.get(key);
    if (!keys) {
      keys = this.throttlers.map((throttler) => this.windowKey(throttler.name!, key.organizationId, key.id));
      this.storageKeys.set(key, keys);
    }
    return keys;
  }

  /**
   * The windows' counts as handleRequest answers them, in the same order: a spent window is the denial
   * (its Retry-After set), and the windows before it keep their budget headers.
   */
  private answer(response: Response, windows: ResolvedWindow[], counts: WindowCount[]): StepOutcome {
    for (let i = 0; i < counts.length; i++) {
      const { throttler, name, key, tracker, limit, ttl } = windows[i];
      const count = counts[i];
      if (!throttler) {
        // An identity's window: no budget headers (they describe the key's), its refusal says whose.
        if (count.isBlocked) return identityRateLimitDenial(limit, ttl, count);
        continue;
      }
      const headers = this.headerNamesOf(name);
      const setHeaders = throttler.setHeaders ?? this.commonOptions.setHeaders ?? true;
      if (count.isBlocked) {
        if (setHeaders) response.setHeader(headers.retryAfter, count.timeToBlockExpire);
        return rateLimitDenial({ limit, ttl, key, tracker, ...count });
      }
      if (setHeaders) {
        response.setHeader(headers.limit, limit);
        response.setHeader(headers.remaining, Math.max(0, limit - count.totalHits));
        response.setHeader(headers.reset, count.timeToExpire);
      }
    }
    return undefined;
  }

  /**
   * The header names of a window, made once (handleRequest formats them on every request). The budget
   * headers are written in lower case, as GitHub's and OpenAI's APIs write theirs: header names are
   * case-insensitive (RFC 9110, 5.1; HTTP/2 sends only lower case), and Node's `setHeader` lowers every
   * name it is given, a new string each time unless it is lower case already. Six a response, that was
   * 0.4 µs of the key check's 1.7–2 µs of headers (a scratch loop of `setHeader` on a ServerResponse).
   */
  private headerNamesOf(name: string): WindowHeaderNames {
    this.headerNames ??= new Map();
    let names = this.headerNames.get(name);
    if (!names) {
      const suffix = name === 'default' ? '' : `-${name}`;
      names = {
        limit: `${this.headerPrefix}-Limit${suffix}`.toLowerCase(),
        remaining: `${this.headerPrefix}-Remaining${suffix}`.toLowerCase(),
        reset: `${this.headerPrefix}-Reset${suffix}`.toLowerCase(),
        retryAfter: `Retry-After${suffix}`,
      };
      this.headerNames.set(name, names);
    }
    return names;
  }

  private async countWindows(context: ExecutionContext, key: KeyContext): Promise<StepOutcome> {
    try {
      for (const throttler of this.throttlers) await this.countWindow(context, throttler);
    } catch (error) {
      if (error instanceof SpentWindow) return error.denial;
      throw error;
    }
    const shared: ResolvedWindow[] = [];
    this.addIdentityWindows(shared, key);
    for (const { key: storageKey, ttl, limit, name } of shared) {
      const count = await this.storageService.increment(storageKey, ttl, limit, ttl, name);
      if (count.isBlocked) return identityRateLimitDenial(limit, ttl, count);
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

  /**
   * `${name}:${tracker}`, the tracker after its organization's hash tag on a Redis Cluster
   * (RedisConnection.slotTag): the windows of a key and of its identity, and their balances, are
   * counted and spent in one script run, which a cluster runs only on keys of one slot.
   */
  protected override generateKey(context: ExecutionContext, tracker: string, name: string): string {
    const organizationId = context.switchToHttp().getRequest<Request>().principal?.organizationId;
    return this.windowKey(name, organizationId, tracker);
  }

  private windowKey(name: string, organizationId: string | undefined, tracker: string): string {
    return `${name}:${organizationId ? this.redis.slotTag(organizationId) : ''}${tracker}`;
  }

  /**
   * Appends the windows the key's identity shares with its other keys (those it sets a limit for), after
   * the key's own: a request must fit both (CONTRACT, "Identities").
   */
  private addIdentityWindows(windows: ResolvedWindow[], key: KeyContext): void {
    const limits = key.identityControls?.rateLimit;
    if (!limits || !key.identity) return;
    const tracker = key.identity.id;
    for (const { name, ttl, limitOf } of IDENTITY_WINDOWS) {
      const limit = limitOf(limits);
      if (limit !== null)
        windows.push({ key: this.windowKey(name, key.organizationId, tracker), tracker, name, limit, ttl });
    }
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

/**
 * A window of the request with its limit and ttl resolved: what a WindowBatchCounter counts. The key's
 * windows are the named throttlers'; an identity's window has no throttler (its limit is the identity's).
 */
interface ResolvedWindow extends WindowToCount {
  throttler?: ThrottlerOptions;
  tracker: string;
}

/** An identity's shared windows: named apart from the throttlers', so no key's window is ever theirs. */
const IDENTITY_WINDOWS = [
  { name: 'identity_minute', ttl: 60_000, limitOf: (limits: IdentityRateLimit) => limits.perMinute },
  { name: 'identity_hour', ttl: 3_600_000, limitOf: (limits: IdentityRateLimit) => limits.perHour },
] as const;

type IdentityRateLimit = NonNullable<KeyContext['identityControls']>['rateLimit'];

/** A spent identity window: 429 rate_limited with `scope: "identity"` and Retry-After. */
function identityRateLimitDenial(limit: number, ttl: number, count: WindowCount): AccessDenial {
  const windowSeconds = Math.round(ttl / 1000);
  return new AccessDenial(
    AccessDenialCode.RateLimited,
    `The identity's shared rate limit of ${limit} requests per ${windowSeconds} s exceeded; retry later.`,
    { 'Retry-After': String(count.timeToBlockExpire) },
    { limit, window_seconds: windowSeconds, scope: 'identity' },
    { scope: 'identity' },
  );
}

interface WindowHeaderNames {
  limit: string;
  remaining: string;
  reset: string;
  retryAfter: string;
}

/** Where a verification's budget headers go: nowhere (`answer` sets them on the response it is given). */
const WITHOUT_HEADERS = { setHeader: () => WITHOUT_HEADERS } as unknown as Response;

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
    // The audit details stay as they were before identities (reason, limit, window); the problem says whose.
    { limit: detail.limit, window_seconds: windowSeconds },
    { scope: 'key' },
  );
}
