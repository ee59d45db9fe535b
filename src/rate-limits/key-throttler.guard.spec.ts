import { Controller, Get, INestApplication, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { SkipThrottle, Throttle, ThrottlerModule, type ThrottlerStorage } from '@nestjs/throttler';
import type { NextFunction, Request, Response } from 'express';
import request from 'supertest';
import { AuditService } from '../audit/audit.service';
import type { KeyContext } from '../auth/principal';
import { ProblemFilter } from '../common/problem.filter';
import { MemoryFixedWindowStorage } from './fixed-window.storage';
import { KeyThrottlerGuard } from './key-throttler.guard';

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

/** Counts calls to the promise-returning `increment`, to tell which path counted a request. */
class CountingStorage extends MemoryFixedWindowStorage {
  promiseCalls = 0;

  override increment(...args: Parameters<ThrottlerStorage['increment']>) {
    this.promiseCalls++;
    return super.increment(...args);
  }
}

/** Nothing but the throttler: each request carries key `key_<x-key header>` with 3 per minute, 100 per hour. */
async function startApp(storage: ThrottlerStorage): Promise<{ app: INestApplication; denials: unknown[] }> {
  const denials: unknown[] = [];
  @Module({
    imports: [
      ThrottlerModule.forRoot({
        throttlers: [
          { name: 'default', ttl: 60_000, limit: 3 },
          { name: 'hour', ttl: 3_600_000, limit: 100 },
        ],
        storage,
      }),
    ],
    controllers: [LimitedController],
    providers: [
      { provide: AuditService, useValue: { recordDenial: (event: unknown) => denials.push(event) } },
      KeyThrottlerGuard,
      { provide: APP_GUARD, useExisting: KeyThrottlerGuard },
    ],
  })
  class LimitedModule {}

  const moduleRef = await Test.createTestingModule({ imports: [LimitedModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  app.useGlobalFilters(new ProblemFilter());
  app.use((req: Request, _res: Response, next: NextFunction) => {
    const id = req.headers['x-key'];
    if (typeof id === 'string') {
      req.principal = {
        kind: 'api_key',
        organizationId: 'org_test',
        userId: null,
        apiKeyId: `key_${id}`,
        role: 'developer',
        permissions: new Set(),
        key: { id: `key_${id}` } as KeyContext,
      };
    }
    next();
  });
  await app.init();
  return { app, denials };
}

describe('KeyThrottlerGuard', () => {
  let app: INestApplication;
  let denials: unknown[];
  const storage = new CountingStorage();

  beforeAll(async () => ({ app, denials } = await startApp(storage)));
  afterAll(() => app.close());

  it('counts plain routes synchronously, with budget headers, then refuses with 429', async () => {
    const before = storage.promiseCalls;
    const accepted = [];
    for (let i = 0; i < 3; i++)
      accepted.push(await request(app.getHttpServer()).get('/plain').set('x-key', 'a'));
    expect(accepted.map((res) => res.status)).toEqual([200, 200, 200]);
    expect(accepted.map((res) => res.headers['x-ratelimit-remaining'])).toEqual(['2', '1', '0']);
    expect(accepted.map((res) => res.headers['x-ratelimit-remaining-hour'])).toEqual(['99', '98', '97']);
    expect(accepted[0].headers['x-ratelimit-limit']).toBe('3');

    const refused = await request(app.getHttpServer()).get('/plain').set('x-key', 'a');
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    // The short path never went through the promise-returning storage call.
    expect(storage.promiseCalls).toBe(before);
    expect(denials).toHaveLength(1);
  });

  it('leaves requests without a key alone', async () => {
    const res = await request(app.getHttpServer()).get('/plain');
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('honours @Throttle() on a route through the library path', async () => {
    const before = storage.promiseCalls;
    const first = await request(app.getHttpServer()).get('/strict').set('x-key', 'b');
    const second = await request(app.getHttpServer()).get('/strict').set('x-key', 'b');
    expect([first.status, second.status]).toEqual([200, 429]);
    expect(first.headers['x-ratelimit-limit']).toBe('1');
    expect(second.body.code).toBe('rate_limited');
    expect(storage.promiseCalls).toBeGreaterThan(before);
  });

  it('honours @SkipThrottle() on a route', async () => {
    const responses = [];
    for (let i = 0; i < 5; i++)
      responses.push(await request(app.getHttpServer()).get('/free').set('x-key', 'c'));
    expect(responses.map((res) => res.status)).toEqual([200, 200, 200, 200, 200]);
    expect(responses[0].headers['x-ratelimit-limit']).toBeUndefined();
    // The hour window still counts: SkipThrottle() skips only the default throttler.
    expect(responses[4].headers['x-ratelimit-remaining-hour']).toBe('95');
  });
});

describe('KeyThrottlerGuard with a storage that only answers with promises', () => {
  it('counts every throttler in order and refuses at the limit', async () => {
    const windows = new MemoryFixedWindowStorage();
    const asyncOnly: ThrottlerStorage = { increment: (...args) => windows.increment(...args) };
    const { app } = await startApp(asyncOnly);
    try {
      const statuses = [];
      let last;
      for (let i = 0; i < 4; i++) {
        last = await request(app.getHttpServer()).get('/plain').set('x-key', 'd');
        statuses.push(last.status);
      }
      expect(statuses).toEqual([200, 200, 200, 429]);
      const res = await request(app.getHttpServer()).get('/plain').set('x-key', 'e');
      expect(res.headers['x-ratelimit-remaining']).toBe('2');
      expect(res.headers['x-ratelimit-remaining-hour']).toBe('99');
    } finally {
      await app.close();
    }
  });
});
