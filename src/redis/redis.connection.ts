import { ConfigOf } from '../config/config-namespace';
import { redisConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';

/**
 * The shared Redis client when REDIS_URL is set (rate-limit counters and cache invalidation use it);
 * `client` is undefined otherwise and those features run in-process.
 */
@Injectable()
export class RedisConnection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  readonly client?: Redis;

  constructor(@Inject(redisConfig.KEY) config: ConfigOf<typeof redisConfig>) {
    if (!config.url) return;
    this.client = new Redis(config.url, {
      lazyConnect: false,
      // Fail a command quickly while Redis is away instead of queueing requests behind it.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      // Commands issued in one turn of the event loop (the rate-limit windows and the credit of many
      // concurrent requests) go out as one pipeline: one write and one read instead of one per command.
      enableAutoPipelining: true,
    });
    this.client.on('error', (error: Error) => this.logger.warn(`redis: ${error.message}`));
  }

  /**
   * Waits (up to 5 s) for the connection before the app takes traffic: with no offline queue, a
   * request arriving earlier would find the rate-limit store unavailable.
   */
  async onModuleInit(): Promise<void> {
    const client = this.client;
    if (!client || client.status === 'ready') return;
    const ready = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 5000);
      client.once('ready', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!(await ready))
      this.logger.warn('Redis is not reachable yet; continuing (see RATE_LIMIT_FAILURE_MODE)');
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.client && this.client.status !== 'end')
      await this.client.quit().catch(() => this.client?.disconnect());
  }
}
