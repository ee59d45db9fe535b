import { ConfigOf } from '../config/config-namespace';
import { databaseConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type Redis from 'ioredis';
import { PostgresListener } from '../database/postgres-listener';
import { RedisConnection } from '../redis/redis.connection';
import { Invalidation, InvalidationBus } from './invalidation-bus';

const CHANNEL = 'gatehouse_invalidation';

interface Envelope {
  from: string;
  invalidation: Invalidation;
}

/**
 * Carries invalidations between instances so a revocation holds everywhere within a second:
 * Redis pub/sub when REDIS_URL is set, otherwise PostgreSQL LISTEN/NOTIFY. The embedded database
 * serves a single process, so it needs none. The transport tells the bus whether it hears the
 * others: while it does not, caches read through (see KeyCache), and once it hears again every cache
 * is cleared, since messages sent meanwhile are lost.
 */
@Injectable()
export class InvalidationTransport implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Invalidation');
  private readonly instanceId = randomUUID();
  private subscriber?: Redis;
  private listener?: PostgresListener;

  constructor(
    @Inject(databaseConfig.KEY) private readonly database: ConfigOf<typeof databaseConfig>,
    private readonly bus: InvalidationBus,
    private readonly redis: RedisConnection,
    private readonly dataSource: DataSource,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.redis.client) await this.viaRedis(this.redis.client);
    else if (this.database.url) await this.viaPostgres(this.database.url);
  }

  private async viaRedis(client: Redis): Promise<void> {
    const subscriber = client.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null });
    this.subscriber = subscriber;
    this.bus.attachTransport((invalidation) => {
      client.publish(CHANNEL, this.envelope(invalidation)).catch((error: Error) => {
        this.logger.warn(`could not publish invalidation: ${error.message}`);
      });
    });
    // ioredis resubscribes by itself after a reconnect; 'ready' comes once the subscription is back.
    subscriber.on('ready', () => this.bus.reportHearing(true));
    subscriber.on('close', () => this.bus.reportHearing(false));
    subscriber.on('error', (error: Error) => this.logger.warn(`subscriber: ${error.message}`));
    subscriber.on('message', (_channel: string, message: string) => this.receive(message));
    await subscriber.subscribe(CHANNEL);
    this.bus.reportHearing(true);
  }

  private async viaPostgres(url: string): Promise<void> {
    this.bus.attachTransport((invalidation) => {
      this.dataSource
        .query('SELECT pg_notify($1, $2)', [CHANNEL, this.envelope(invalidation)])
        .catch((error: Error) => this.logger.warn(`could not publish invalidation: ${error.message}`));
    });
    this.listener = new PostgresListener(
      url,
      CHANNEL,
      {
        onMessage: (payload) => this.receive(payload),
        onHearing: (hearing) => this.bus.reportHearing(hearing),
      },
      this.logger,
    );
    await this.listener.start();
  }

  private envelope(invalidation: Invalidation): string {
    return JSON.stringify({ from: this.instanceId, invalidation } satisfies Envelope);
  }

  private receive(message: string): void {
    try {
      const { from, invalidation } = JSON.parse(message) as Envelope;
      if (from !== this.instanceId) this.bus.deliverLocally(invalidation);
    } catch {
      this.logger.warn('ignored a malformed invalidation message');
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.subscriber) this.subscriber.disconnect();
    await this.listener?.stop();
  }
}
