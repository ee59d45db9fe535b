import { ConfigOf } from '../config/config-namespace';
import { rateLimitsConfig } from '../config/namespaces';
import { ExecutionContext, Module } from '@nestjs/common';
import { ThrottlerModule, type ThrottlerStorage } from '@nestjs/throttler';
import { requestOf } from '../http/http-context';
import { Clock } from '../common/clock';
import { RedisConnection, type RedisClient } from '../redis/redis.connection';
import { MemoryFixedWindowStorage, RedisFixedWindowStorage } from './fixed-window.storage';
import { MemorySlidingWindowStorage, RedisSlidingWindowStorage } from './sliding-window.storage';

// A key's windows, or an OAuth grant's (which carries its limits as a key's: see OAuthGrantScope).
const keyOf = (context: ExecutionContext) => {
  const principal = requestOf(context).principal;
  return principal?.key ?? principal?.oauth?.windows;
};

/**
 * RATE_LIMIT_WINDOW picks how windows count, REDIS_URL where: in Redis, shared by every instance, or in
 * this process, on the app's Clock (so a test can carry a key across a window's edge).
 */
function storageOf(
  config: ConfigOf<typeof rateLimitsConfig>,
  redis: RedisClient | undefined,
  clock: Clock,
): ThrottlerStorage {
  if (config.window === 'sliding')
    return redis
      ? new RedisSlidingWindowStorage(redis, config.failureMode)
      : new MemorySlidingWindowStorage(clock);
  return redis ? new RedisFixedWindowStorage(redis, config.failureMode) : new MemoryFixedWindowStorage(clock);
}

@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [rateLimitsConfig.KEY, RedisConnection, Clock],
      useFactory: (config: ConfigOf<typeof rateLimitsConfig>, redis: RedisConnection, clock: Clock) => ({
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
        storage: storageOf(config, redis.client, clock),
      }),
    }),
  ],
})
export class RateLimitsModule {}
