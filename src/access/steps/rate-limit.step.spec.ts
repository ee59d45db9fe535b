import { Controller, Get, INestApplication, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { SkipThrottle, Throttle, ThrottlerModule } from '@nestjs/throttler';
import type { NextFunction, Request, Response } from 'express';
import request from 'supertest';
import { CreditsService } from '../../api-keys/credits/credits.service';
import { ProblemFilter } from '../../http/problem.filter';
import {
  MemoryFixedWindowStorage,
  type WindowCount,
  type WindowToCount,
} from '../../rate-limits/fixed-window.storage';
import { RateLimitError, RateLimitErrorCode } from '../../rate-limits/rate-limits.errors';
import type { KeyContext } from '../principal';
import { DenialRecorder } from '../denial-recorder';
import { ConcurrencyStep } from './concurrency.step';
import { CreditsStep } from './credits.step';
import { KeyThrottlerGuard } from '../guards/key-throttler.guard';
import { accessConfig } from '../../config/namespaces';
import { AccessDenial } from '../access-denial';
import { denialException } from '../access-denial';
import { KeyCheck } from '../key-check';
import type { AccessAttempt } from '../access-attempt';
import { RateLimitStep } from './rate-limit.step';
import { RedisConnection } from '../../redis/redis.connection';

@Controller()
class LimitedController {
  @Get('plain')
  plain(): string {
    return 'plain';
  }

  @Get('strict')
  @Throttle({ default: { limit: 1, ttl: 60_000 } })
  strict(): string {
    return 'strict';
  }

  @Get('free')
  @SkipThrottle()
  free(): string {
    return 'free';
  }
}

/** Counts nothing: Redis unreachable with RATE_LIMIT_FAILURE_MODE=closed, as RedisFixedWindowStorage says it. */
class UnreachableStorage {
  increment(): Promise<never> {
    return Promise.reject(
      new RateLimitError(
        RateLimitErrorCode.RateLimiterUnavailable,
        'Rate limits cannot be checked right now.',
      ),
    );
  }
}

/** The same counters behind the asynchronous interface only: requests take handleRequest's path. */
class AwaitedStorage {
  private readonly inner = new MemoryFixedWindowStorage();
  increment(
    ...args: Parameters<MemoryFixedWindowStorage['increment']>
  ): ReturnType<MemoryFixedWindowStorage['increment']> {
    return this.inner.increment(...args);
  }
}

/** The counters behind a batch call that answers later, as Redis does: the step's awaited path. */
class LaterBatchStorage extends AwaitedStorage {
  private readonly counters = new MemoryFixedWindowStorage();
  countWindows(windows: readonly WindowToCount[]): Promise<WindowCount[]> {
    return new Promise((resolve) => setImmediate(() => resolve(this.counters.countWindows(windows))));
  }
}

/** Steps of the other guards, not run here: any call fails the test. */
const notHere = {
  check: (): never => {
    throw new Error('only the third guard runs in this app');
  },
};

/**
 * Nothing but the third guard's steps: each request carries key `key_<x-key header>` (3 per minute, 100 per
 * hour), or no key at all without the header; refusals (and checks that failed) are collected instead
 * of audited and counted.
 */
async function startApp(
  storage:
    | MemoryFixedWindowStorage
    | UnreachableStorage
    | AwaitedStorage
    | LaterBatchStorage = new MemoryFixedWindowStorage(),
): Promise<{ app: INestApplication; denials: AccessDenial[]; failures: unknown[] }> {
  const denials: AccessDenial[] = [];
  const failures: unknown[] = [];
  const refusals = new WeakSet<object>();
  @Module({
    imports: [
      ThrottlerModule.forRoot({
        throttlers: [
          { name: 'default', ttl: 60_000, limit: 3 },
          { name: 'hour', ttl: 3_600_000, limit: 100 },
          // A window added the way README "Extending" says: one more named throttler.
          { name: 'day', ttl: 86_400_000, limit: () => 1000 },
        ],
        storage,
      }),
    ],
    controllers: [LimitedController],
    providers: [
      { provide: accessConfig.KEY, useValue: { maxConcurrentRequestsPerKey: 10 } },
      ConcurrencyStep,
      RateLimitStep,
      CreditsStep,
      // Keys here have no credits, so the credits step answers without asking the service.
      { provide: CreditsService, useValue: {} },
      // The storage is given (not Redis): window keys carry no cluster hash tag.
      {
        provide: RedisConnection,
        useValue: new RedisConnection({
          url: undefined,
          clusterNodes: undefined,
          commandTimeoutMs: 500,
          keyPrefix: '',
        }),
      },
      {
        provide: KeyCheck,
        inject: [RateLimitStep, CreditsStep, ConcurrencyStep],
        useFactory: (rateLimit: RateLimitStep, credits: CreditsStep, concurrency: ConcurrencyStep) =>
          new KeyCheck(
            notHere as never,
            notHere as never,
            notHere as never,
            notHere as never,
            rateLimit,
            credits,
            concurrency,
          ),
      },
      {
        provide: DenialRecorder,
        useValue: {
          refuse: (_attempt: unknown, denial: AccessDenial) => {
            denials.push(denial);
            const exception = denialException(denial);
            refusals.add(exception);
            return exception;
          },
          // As DenialRecorder.failed: a refusal passing through was recorded already.
          failed: (_attempt: unknown, error: object) => (refusals.has(error) || failures.push(error), error),
          allow: () => undefined,
        },
      },
      KeyThrottlerGuard,
      { provide: APP_GUARD, useExisting: KeyThrottlerGuard },
      { provide: APP_FILTER, useClass: ProblemFilter },
    ],
  })
  class ThrottledModule {}

  const moduleRef = await Test.createTestingModule({ imports: [ThrottledModule] }).compile();
  const app = moduleRef.createNestApplication();
  app.use((req: Request, _res: Response, next: NextFunction) => {
    const keyId = req.headers['x-key'];
    if (typeof keyId === 'string') {
      req.principal = {
        kind: 'api_key',
        organizationId: 'org_test',
        userId: null,
        apiKeyId: `key_${keyId}`,
        role: 'developer',
        permissions: new Set(),
        key: {
          id: `key_${keyId}`,
          rateLimit: { perMinute: null, perHour: null },
          credits: null,
        } as unknown as KeyContext,
      };
    }
    next();
  });
  await app.init();
  return { app, denials, failures };
}

describe('the rate-limit step (through KeyThrottlerGuard)', () => {
  let app: INestApplication;
  let denials: AccessDenial[];
  let failures: unknown[];
  beforeEach(async () => ({ app, denials, failures } = await startApp()));
  afterEach(() => app.close());

  const get = (path: string, key?: string) => {
    const req = request(app.getHttpServer()).get(path);
    return key ? req.set('x-key', key) : req;
  };

  it('counts per key across routes, with budget headers, and refuses with rate_limited', async () => {
    const first = await get('/plain', 'a');
    expect(first.status).toBe(200);
    expect(first.headers['x-ratelimit-limit']).toBe('3');
    expect(first.headers['x-ratelimit-remaining']).toBe('2');
    expect(first.headers['x-ratelimit-limit-hour']).toBe('100');
    expect(first.headers['x-ratelimit-limit-day']).toBe('1000');
    expect(first.headers['x-ratelimit-remaining-day']).toBe('999');
    expect((await get('/plain', 'a')).status).toBe(200);
    expect((await get('/plain', 'b')).status).toBe(200);
    expect((await get('/plain', 'a')).status).toBe(200);
    const refused = await get('/plain', 'a');
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    expect(denials.map((d) => d.code)).toEqual(['rate_limited']);
  });

  it('counts a key against its own windows on every route, whatever the route declares', async () => {
    // @Throttle/@SkipThrottle are route budgets; a key's budget is the key's (see the step's comment).
    expect((await get('/strict', 'c')).status).toBe(200);
    expect((await get('/free', 'c')).status).toBe(200);
    const third = await get('/strict', 'c');
    expect(third.status).toBe(200);
    expect(third.headers['x-ratelimit-remaining']).toBe('0');
    expect((await get('/free', 'c')).status).toBe(429);
    expect(denials.map((d) => d.code)).toEqual(['rate_limited']);
  });

  it('answers in one turn, without a promise, when the counters are in this process', () => {
    const headers = new Map<string, unknown>();
    const req = { principal: { key: { id: 'key_sync', rateLimit: { perMinute: null, perHour: null } } } };
    const res = { setHeader: (name: string, value: unknown) => headers.set(name, value) };
    const context = { switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }) };
    const outcome = app
      .get(RateLimitStep)
      .check({ context, request: req, response: res } as unknown as AccessAttempt);
    expect(outcome).toBeUndefined();
    expect(Object.fromEntries(headers)).toEqual({
      'x-ratelimit-limit': 3,
      'x-ratelimit-remaining': 2,
      'x-ratelimit-reset': 60,
      'x-ratelimit-limit-hour': 100,
      'x-ratelimit-remaining-hour': 99,
      'x-ratelimit-reset-hour': 3600,
      'x-ratelimit-limit-day': 1000,
      'x-ratelimit-remaining-day': 999,
      'x-ratelimit-reset-day': 86400,
    });
  });

  it("answers the same statuses, headers and refusals as the throttler's handleRequest, at once or awaited", async () => {
    const RATE_HEADERS = /^(x-ratelimit-|retry-after)/;
    const sequence = async (): Promise<unknown[]> => {
      const seen: unknown[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await get('/plain', 'same');
        const headers = Object.entries(res.headers).filter(([name]) => RATE_HEADERS.test(name));
        seen.push({ status: res.status, code: res.body.code, headers: Object.fromEntries(headers) });
      }
      return seen;
    };
    const inOneTurn = await sequence();
    await app.close();
    ({ app, denials, failures } = await startApp(new AwaitedStorage()));
    const throughHandleRequest = await sequence();
    await app.close();
    ({ app, denials, failures } = await startApp(new LaterBatchStorage()));
    const inOneLaterCall = await sequence();
    expect(inOneTurn).toEqual(throughHandleRequest);
    expect(inOneLaterCall).toEqual(throughHandleRequest);
    expect(inOneTurn.map((r) => (r as { status: number }).status)).toEqual([200, 200, 200, 429, 429]);
  });

  it('does not limit requests without a key', async () => {
    for (let i = 0; i < 5; i++) expect((await get('/plain')).status).toBe(200);
    expect(denials).toEqual([]);
    expect(failures).toEqual([]);
  });

  it('reports a check that could not count (503 rate_limiter_unavailable) to the recorder, so usage counts it', async () => {
    await app.close();
    ({ app, denials, failures } = await startApp(new UnreachableStorage()));
    const refused = await get('/plain', 'd');
    expect(refused.status).toBe(503);
    expect(refused.body.code).toBe('rate_limiter_unavailable');
    expect(failures).toEqual([expect.objectContaining({ code: 'rate_limiter_unavailable' })]);
    expect(denials).toEqual([]);
  });
});
