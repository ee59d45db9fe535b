import { ConfigOf } from '../config/config-namespace';
import { databaseConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import Redis, { Cluster, type RedisOptions } from 'ioredis';
import { PostgresListener } from '../database/postgres-listener';
import { RedisConnection, type RedisClient } from '../redis/redis.connection';
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
/** On a cluster: the tries to reach a subscriber's node before the next node is tried, and their pace. */
const NODE_RECONNECT_TRIES = 3;
const NODE_RETRY_MS = 100;

const SUBSCRIBER_OPTIONS: RedisOptions = {
  enableOfflineQueue: true,
  maxRetriesPerRequest: null,
  // Subscribing waits for Redis however long it takes; a hang is caught by the heartbeat (watchHearing).
  commandTimeout: undefined,
  // Only a backstop for a connection that hangs before it is ready (the ready check, SUBSCRIBE), so
  // it is dropped and tried again once the network heals; a ready one is judged by watchHearing.
  socketTimeout: STUCK_CONNECTION_MS,
  // A dropped connection closes at once (watchHearing), not after a hung Redis fails to answer.
  disconnectTimeout: 0,
  // The 'ready' handler (listen) subscribes after every (re)connect. ioredis's own resubscription
  // sends a SUBSCRIBE whose promise nobody holds: a connection closed before Redis answers it (a
  // shutdown while a hung Redis comes back) turns into an unhandled rejection.
  autoResubscribe: false,
};

interface Envelope {
  from: string;
  invalidation: Invalidation;
}

/**
 * Carries invalidations between instances so a revocation holds everywhere within a second:
 * Redis pub/sub when REDIS_URL or REDIS_CLUSTER_NODES is set, otherwise PostgreSQL LISTEN/NOTIFY. The embedded database
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
  private stopped = false;

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

  private async viaRedis(client: RedisClient): Promise<void> {
    const channel = this.redis.channel(CHANNEL);
    this.bus.attachTransport((invalidation) => {
      this.redis.publish(channel, this.envelope(invalidation)).catch((error: Error) => {
        this.logger.warn(`could not publish invalidation: ${error.message}`);
      });
    });
    // The start waits a little for the first SUBSCRIBE, so an instance normally takes traffic hearing the
    // others; a Redis that does not answer must not hold the start forever: the instance then starts deaf
    // (caches distrusted) and the 'ready' handler (listen) reports hearing once Redis answers.
    const subscribed = this.listen(client, channel, 0);
    const gaveUp = sleep(START_SUBSCRIBE_WAIT_MS, false, { ref: false });
    if (await Promise.race([subscribed, gaveUp])) this.bus.reportHearing(true);
    else
      this.logger.warn(
        'Redis does not answer the subscription yet: key caches distrust what they hold until it does',
      );
  }

  /**
   * Subscribes a connection of its own (a subscribed connection sends nothing else), watched by its
   * heartbeat; resolves whether the first SUBSCRIBE was answered. On a cluster the connection is to one
   * node, whichever: a PUBLISH reaches every node. A node that stays unreachable (stopped, failed over)
   * is left after a few tries for the next one the cluster knows, `attempt` counting the nodes tried.
   */
  private listen(client: RedisClient, channel: string, attempt: number): Promise<boolean> {
    const subscriber = this.subscriberFor(client, attempt);
    if (!subscriber) {
      // A cluster whose nodes are not known yet (its first connection not made): try again shortly.
      return sleep(NODE_RETRY_MS, undefined, { ref: false }).then(() =>
        this.stopped ? false : this.listen(client, channel, attempt + 1),
      );
    }
    this.subscriber = subscriber;
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
    if (client instanceof Cluster) {
      subscriber.on('end', () => {
        if (this.stopped || this.subscriber !== subscriber) return;
        void this.listen(client, channel, attempt + 1);
      });
    }
    clearInterval(this.heartbeat);
    this.heartbeat = watchHearing(subscriber, HEARTBEAT_MS, HEARING_DEADLINE_MS);
    return subscriber.subscribe(channel).then(
      () => true,
      () => false,
    );
  }

  /** A new subscriber connection: to Redis, or to the `attempt`-th node (modulo) a cluster knows. */
  private subscriberFor(client: RedisClient, attempt: number): Redis | undefined {
    if (!(client instanceof Cluster)) return client.duplicate(SUBSCRIBER_OPTIONS);
    const nodes = client.nodes();
    if (!nodes.length) return undefined;
    return nodes[attempt % nodes.length].duplicate({
      ...SUBSCRIBER_OPTIONS,
      lazyConnect: false,
      // A cluster node's connection keeps the cluster's settings for nodes; this one tries a few times,
      // then ends ('end' above), and the next node is tried.
      retryStrategy: (times: number) => (times > NODE_RECONNECT_TRIES ? null : times * NODE_RETRY_MS),
    });
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
    this.stopped = true;
    clearInterval(this.heartbeat);
    if (this.subscriber) this.subscriber.disconnect();
    await this.listener?.stop();
  }
}
