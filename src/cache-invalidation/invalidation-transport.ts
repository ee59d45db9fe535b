import { ConfigOf } from '../config/config-namespace';
import { databaseConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import type Redis from 'ioredis';
import { PostgresListener } from '../database/postgres-listener';
import { RedisConnection } from '../redis/redis.connection';
import { watchHearing } from './hearing-watch';
import { Invalidation, InvalidationBus } from './invalidation-bus';

const CHANNEL = 'gatehouse_invalidation';
// How often the Redis subscriber asks whether Redis still answers, and how long it waits: a hung Redis
// is noticed within 0.75 s, so caches distrust their entries (KeyCache: a second at most) in time for a
// revocation elsewhere to hold here within the second. Independent of REDIS_COMMAND_TIMEOUT_MS, since
// that promise does not change with it.
const HEARTBEAT_MS = 250;
const HEARING_DEADLINE_MS = 500;
/** A subscriber connection that has waited this long for any answer is dropped and made again. */
const STUCK_CONNECTION_MS = 5_000;
/** How long the start waits for the first subscription before it goes on deaf. */
const START_SUBSCRIBE_WAIT_MS = 2_000;

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
  private heartbeat?: NodeJS.Timeout;
  private listener?: PostgresListener;

  constructor(
    @Inject(databaseConfig.KEY) private readonly database: ConfigOf<typeof databaseConfig>,
    private readonly bus: InvalidationBus,
    private readonly redis: RedisConnection,
    private readonly dataSource: DataSource,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.redis.client) await this.viaRedis(this.redis.client);
    // LISTEN holds a session: past a pooler, PostgreSQL itself (DATABASE_DIRECT_URL).
    else if (this.database.directUrl) await this.viaPostgres(this.database.directUrl);
  }

  private async viaRedis(client: Redis): Promise<void> {
    const channel = this.redis.channel(CHANNEL);
    const subscriber = client.duplicate({
      enableOfflineQueue: true,
      maxRetriesPerRequest: null,
      // Subscribing waits for Redis however long it takes; a hang is caught by the heartbeat below.
      commandTimeout: undefined,
      // Only a backstop for a connection that hangs before it is ready (the ready check, SUBSCRIBE), so
      // it is dropped and tried again once the network heals; a ready one is judged by watchHearing.
      socketTimeout: STUCK_CONNECTION_MS,
      // A dropped connection closes at once (watchHearing), not after a hung Redis fails to answer.
      disconnectTimeout: 0,
      // The 'ready' handler below subscribes after every (re)connect. ioredis's own resubscription sends
      // a SUBSCRIBE whose promise nobody holds: a connection closed before Redis answers it (a shutdown
      // while a hung Redis comes back) turns into an unhandled rejection.
      autoResubscribe: false,
    });
    this.subscriber = subscriber;
    this.bus.attachTransport((invalidation) => {
      client.publish(channel, this.envelope(invalidation)).catch((error: Error) => {
        this.logger.warn(`could not publish invalidation: ${error.message}`);
      });
    });
    // Subscribed again after every reconnect, and hearing reported once Redis answers that SUBSCRIBE,
    // so nothing published meanwhile is missed.
    subscriber.on('ready', () => {
      subscriber.subscribe(channel).then(
        () => this.bus.reportHearing(true),
        (error: Error) => this.logger.warn(`could not subscribe: ${error.message}`),
      );
    });
    subscriber.on('close', () => this.bus.reportHearing(false));
    subscriber.on('error', (error: Error) => this.logger.warn(`subscriber: ${error.message}`));
    subscriber.on('message', (_channel: string, message: string) => this.receive(message));
    // The start waits a little for the first SUBSCRIBE, so an instance normally takes traffic hearing the
    // others; a Redis that does not answer must not hold the start forever: the instance then starts deaf
    // (caches distrusted) and the 'ready' handler above reports hearing once Redis answers.
    const subscribed = subscriber.subscribe(channel).then(
      () => true,
      () => false,
    );
    const gaveUp = sleep(START_SUBSCRIBE_WAIT_MS, false, { ref: false });
    if (await Promise.race([subscribed, gaveUp])) this.bus.reportHearing(true);
    else
      this.logger.warn(
        'Redis does not answer the subscription yet: key caches distrust what they hold until it does',
      );
    this.heartbeat = watchHearing(subscriber, HEARTBEAT_MS, HEARING_DEADLINE_MS);
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
    clearInterval(this.heartbeat);
    if (this.subscriber) this.subscriber.disconnect();
    await this.listener?.stop();
  }
}
