import { ExecutionContext, Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import type { Request } from 'express';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { RedisConnection } from '../redis/redis.connection';
import { MemoryFixedWindowStorage, RedisFixedWindowStorage } from './fixed-window.storage';

const keyOf = (context: ExecutionContext) => context.switchToHttp().getRequest<Request>().principal?.key;

@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [APP_CONFIG, RedisConnection],
      useFactory: (config: AppConfig, redis: RedisConnection) => ({
        throttlers: [
          {
            name: 'default',
            ttl: 60_000,
            limit: (context: ExecutionContext) =>
              keyOf(context)?.rateLimit.perMinute ?? config.DEFAULT_REQUESTS_PER_MINUTE,
          },
          {
            name: 'hour',
            ttl: 3_600_000,
            limit: (context: ExecutionContext) =>
              keyOf(context)?.rateLimit.perHour ?? config.DEFAULT_REQUESTS_PER_HOUR,
          },
        ],
        storage: redis.client
          ? new RedisFixedWindowStorage(redis.client, config.RATE_LIMIT_FAILURE_MODE)
          : new MemoryFixedWindowStorage(),
      }),
    }),
  ],
})
export class RateLimitsModule {}
