import { ConfigOf } from '../config/config-namespace';
import { redisConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import { SELF_BATCHED_SCRIPTS } from './self-batched-scripts';

/**
 * The shared Redis client when REDIS_URL is set (rate-limit counters, credits and cache invalidation
 * use it); `client` is undefined otherwise and those features run in-process.
 *
 * Every command has a deadline (REDIS_COMMAND_TIMEOUT_MS), so a Redis that hangs (paused, partitioned:
 * connections accepted, nothing answered) is treated exactly as one that is stopped. The breaker is the
 * connection itself, in one place for every user of `client`:
 * - trip: a connection that owes a reply and receives nothing for most of the deadline is dropped;
 * - open: with no connection and no offline queue, every command fails at once with the error a stopped
 *   Redis gives ("Stream isn't writeable…"), so `RATE_LIMIT_FAILURE_MODE` applies at once;
 * - probe: after a short cool-down the client reconnects, and its ready check (itself under the
 *   deadline) is the one probe; commands flow again only once it answers.
 */
@Injectable()
export class RedisConnection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  readonly client?: Redis;
  /** REDIS_KEY_PREFIX: ioredis puts it before every key; pub/sub channels are not keys, see `channel`. */
  private readonly keyPrefix: string;

  constructor(@Inject(redisConfig.KEY) config: ConfigOf<typeof redisConfig>) {
    this.keyPrefix = config.keyPrefix;
    if (!config.url) return;
    const commandTimeoutMs = config.commandTimeoutMs;
    this.client = new Redis(config.url, {
      lazyConnect: false,
      // Keys of deployments (or test databases) that share one Redis stay apart; scripts' KEYS included.
      keyPrefix: config.keyPrefix || undefined,
      // Fail a command quickly while Redis is away instead of queueing requests behind it.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      // Commands issued in one turn of the event loop (credit spends, refunds and reads of many concurrent
      // requests) go out as one pipeline: one write and one read instead of one per command.
      enableAutoPipelining: true,
      // Except the rate-limit windows' scripts, which batch a turn's requests themselves
      // (self-batched-scripts.ts).
      autoPipeliningIgnoredCommands: Object.values(SELF_BATCHED_SCRIPTS),
      commandTimeout: commandTimeoutMs,
      // Dropped a little before the first caller's deadline passes, so the next caller (the second
      // rate-limit window of the same request) already meets the open breaker instead of waiting too.
      socketTimeout: Math.max(1, Math.floor(commandTimeoutMs * 0.8)),
      // A command that timed out was reported failed (the caller fell back: limits not counted, the
      // credit spent in the database): sending it again after a reconnect would apply it twice.
      autoResendUnfulfilledCommands: false,
      // The cool-down before the probe: short, so a Redis back from a hang is used again within a second.
      retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
    });
    this.client.on('error', (error: Error) => this.logger.warn(`redis: ${error.message}`));
  }

  /** A pub/sub channel name in this deployment's namespace (ioredis's keyPrefix leaves channels alone). */
  channel(name: string): string {
    return this.keyPrefix + name;
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
