import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { APP_CONFIG, AppConfig } from '../config/app-config';

/**
 * The shared Redis client when REDIS_URL is set (rate-limit counters and cache invalidation use it);
 * `client` is undefined otherwise and those features run in-process.
 */
@Injectable()
export class RedisConnection implements OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  readonly client?: Redis;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    if (!config.REDIS_URL) return;
    this.client = new Redis(config.REDIS_URL, {
      lazyConnect: false,
      // Fail a command quickly while Redis is away instead of queueing requests behind it.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
    });
    this.client.on('error', (error: Error) => this.logger.warn(`redis: ${error.message}`));
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.client && this.client.status !== 'end')
      await this.client.quit().catch(() => this.client?.disconnect());
  }
}
