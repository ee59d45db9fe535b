import { ConfigOf } from '../config/config-namespace';
import { redisConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import Redis, { Cluster, type RedisOptions } from 'ioredis';
import { SELF_BATCHED_SCRIPTS } from './self-batched-scripts';
import { ServerRuns } from './server-runs';

/** One Redis or a Redis Cluster: the commands every user here sends are the same on both. */
export type RedisClient = Redis | Cluster;

/** A RedisConnection that has a client (REDIS_URL or REDIS_CLUSTER_NODES is set). */
export type ConnectedRedis = RedisConnection & { readonly client: RedisClient; readonly runs: ServerRuns };

/**
 * The shared Redis client when REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster) is set:
 * rate-limit counters, credits and cache invalidation use it; `client` is undefined otherwise and those
 * features run in-process.
 *
 * Every command has a deadline (REDIS_COMMAND_TIMEOUT_MS), so a Redis that hangs (paused, partitioned:
 * connections accepted, nothing answered) is treated exactly as one that is stopped. The breaker is the
 * connection itself, in one place for every user of `client`:
 * - trip: a connection that owes a reply and receives nothing for most of the deadline is dropped;
 * - open: with no connection and no offline queue, every command fails at once with the error a stopped
 *   Redis gives ("Stream isn't writeable…"), so `RATE_LIMIT_FAILURE_MODE` applies at once;
 * - probe: after a short cool-down the client reconnects, and its ready check (itself under the
 *   deadline) is the one probe; commands flow again only once it answers.
 * On a cluster each node's connection is such a breaker: a stopped shard fails its own keys' commands
 * and no other's.
 */
@Injectable()
export class RedisConnection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  readonly client?: RedisClient;
  /** REDIS_KEY_PREFIX: ioredis puts it before every key; pub/sub channels are not keys, see `channel`. */
  private readonly keyPrefix: string;
  /** Which server answers for a key, and since when (ServerRuns); undefined without Redis. */
  readonly runs?: ServerRuns;

  constructor(@Inject(redisConfig.KEY) config: ConfigOf<typeof redisConfig>) {
    this.keyPrefix = config.keyPrefix;
    const commandTimeoutMs = config.commandTimeoutMs;
    // Keys of deployments (or test databases) that share one Redis stay apart; scripts' KEYS included.
    // Put on by the client that makes the command (the cluster's, not its nodes' connections).
    const keyPrefix = config.keyPrefix || undefined;
    const connection: RedisOptions = {
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      commandTimeout: commandTimeoutMs,
      // Dropped a little before the first caller's deadline passes, so the next caller (the second
      // rate-limit window of the same request) already meets the open breaker instead of waiting too.
      socketTimeout: Math.max(1, Math.floor(commandTimeoutMs * 0.8)),
      // A command that timed out was reported failed (the caller fell back: limits not counted, the
      // credit spent in the database): sending it again after a reconnect would apply it twice.
      autoResendUnfulfilledCommands: false,
    };
    const pipelining = {
      // Commands issued in one turn of the event loop (credit spends, refunds and reads of many concurrent
      // requests) go out as one pipeline: one write and one read instead of one per command (per node,
      // on a cluster).
      enableAutoPipelining: true,
      // Except the rate-limit windows' scripts, which batch a turn's requests themselves
      // (self-batched-scripts.ts).
      autoPipeliningIgnoredCommands: Object.values(SELF_BATCHED_SCRIPTS),
    };
    // The cool-down before the probe: short, so a Redis back from a hang is used again within a second.
    const retry = (attempt: number) => Math.min(attempt * 100, 1000);
    if (config.clusterNodes) {
      this.client = new Cluster(config.clusterNodes, {
        keyPrefix,
        // Fail a command quickly while its shard is away instead of queueing requests behind it.
        enableOfflineQueue: false,
        ...pipelining,
        redisOptions: connection,
        clusterRetryStrategy: retry,
        // A node that closed is connected again (a restarted primary that kept its slots): by default
        // ioredis waits for a MOVED that a shard without replicas never sends.
        clusterNodeRetryStrategy: retry,
        // A command for a shard whose connection is down, or that the cluster reports down, fails at
        // once (the open breaker), not after ioredis's default of 16 tries 100 ms apart: the caller's
        // fallback (the outage policy, credits in the database) answers instead.
        retryDelayOnFailover: 0,
        retryDelayOnClusterDown: 0,
        // Which node serves which slots is asked every second, so a failover's new primary (or a primary
        // back) is used within about a second; MOVED answers are followed at once.
        slotsRefreshInterval: 1000,
        slotsRefreshTimeout: 1000,
      });
    } else if (config.url) {
      this.client = new Redis(config.url, {
        ...connection,
        keyPrefix,
        lazyConnect: false,
        // Fail a command quickly while Redis is away instead of queueing requests behind it.
        enableOfflineQueue: false,
        ...pipelining,
        retryStrategy: retry,
      });
    }
    if (!this.client) return;
    this.client.on('error', (error: Error) => this.logger.warn(`redis: ${error.message}`));
    // ioredis connects to a cluster's nodes on their first command, and a command for a node still
    // connecting fails (no offline queue): the first requests for each shard would meet the outage
    // policy. So every node the cluster learns of is connected at once.
    if (this.client instanceof Cluster)
      this.client.on('+node', (node: Redis) => void node.connect().catch(() => undefined));
    this.runs = new ServerRuns(this.client);
  }

  /** Whether Redis is configured (the client exists, connected or not). */
  isConfigured(): this is ConnectedRedis {
    return this.client !== undefined;
  }

  /** Whether `client` is a Redis Cluster: a script's keys must then share a hash slot (`slotTag`). */
  get clustered(): boolean {
    return this.client instanceof Cluster;
  }

  /**
   * What goes in the keys of one organization's scripts so that they share a hash slot on a cluster: a
   * hash tag of the organization's id (`{org_…}:`); nothing on one Redis, whose keys stay as they were.
   * A key's windows, its identity's windows and both balances are counted and spent in one script run
   * (RateLimitStep, CreditsStep.rideOf), so one organization's keys live on one shard.
   */
  slotTag(organizationId: string): string {
    return this.clustered ? `{${organizationId}}:` : '';
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
    if (!client) return;
    const deadline = Date.now() + 5000;
    let ready = await readyWithin(client, deadline);
    // A cluster is ready once it knows its slots; its primaries' connections, each, a moment later.
    if (ready && client instanceof Cluster)
      for (const node of client.nodes('master')) ready = (await readyWithin(node, deadline)) && ready;
    if (!ready) this.logger.warn('Redis is not reachable yet; continuing (see RATE_LIMIT_FAILURE_MODE)');
  }

  /** Whether Redis answers: one Redis, or every primary of a cluster (a shard down is a Redis down for its keys). */
  async ping(): Promise<void> {
    const client = this.client!;
    if (!(client instanceof Cluster)) {
      await client.ping();
      return;
    }
    const primaries = client.nodes('master');
    if (!primaries.length) throw new Error(`the cluster is ${client.status}: no primary known`);
    await Promise.all(primaries.map((node) => node.ping()));
  }

  /**
   * PUBLISH on a cluster goes to any node, which relays it to every other: when the one the client
   * picked cannot take it (its shard is down), every other connected node is tried before giving up.
   */
  async publish(channel: string, message: string): Promise<void> {
    const client = this.client!;
    try {
      await client.publish(channel, message);
      return;
    } catch (error) {
      if (!(client instanceof Cluster)) throw error;
      for (const node of client.nodes()) {
        if (node.status !== 'ready') continue;
        try {
          await node.publish(channel, message);
          return;
        } catch {
          // the next node
        }
      }
      throw error;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.client && this.client.status !== 'end')
      await this.client.quit().catch(() => this.client?.disconnect());
  }
}

/** Whether `client` is (or becomes) ready before `deadline` (Date.now()). */
async function readyWithin(client: Redis | Cluster, deadline: number): Promise<boolean> {
  if (client.status === 'ready') return true;
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
    client.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}
