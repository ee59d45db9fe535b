import { ConfigOf } from '../config/config-namespace';
import { rateLimitsConfig } from '../config/namespaces';
import { ExecutionContext, Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import type { Request } from 'express';
import { RedisConnection } from '../redis/redis.connection';
import { MemoryFixedWindowStorage, RedisFixedWindowStorage } from './fixed-window.storage';

const keyOf = (context: ExecutionContext) => context.switchToHttp().getRequest<Request>().principal?.key;

@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [rateLimitsConfig.KEY, RedisConnection],
      useFactory: (config: ConfigOf<typeof rateLimitsConfig>, redis: RedisConnection) => ({
        throttlers: [
          {
            name: 'default',
            ttl: 60_000,
            limit: (context: ExecutionContext) =>
              keyOf(context)?.rateLimit.perMinute ?? config.defaultPerMinute,
          },
          {
            name: 'hour',
            ttl: 3_600_000,
            limit: (context: ExecutionContext) => keyOf(context)?.rateLimit.perHour ?? config.defaultPerHour,
          },
        ],
        storage: redis.client
          ? new RedisFixedWindowStorage(redis.client, config.failureMode)
          : new MemoryFixedWindowStorage(),
      }),
    }),
  ],
})
export class RateLimitsModule {}
