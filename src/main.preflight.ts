import Redis from 'ioredis';
import { Client } from 'pg';
import type { AppConfig } from './config/app-config';
import { redisClusterNodes } from './config/namespaces';

const CONNECT_TIMEOUT_MS = 5_000;

/** The URL as it may be shown: without its password. */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable URL)';
  }
}

async function reachPostgres(url: string): Promise<void> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function reachRedis(url: string): Promise<void> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    // connectTimeout covers only the TCP connect: a paused server accepts it and never answers the ready
    // check or the PING, so those get the same deadline.
    commandTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  // connect() rejects with "Connection is closed."; the socket's own error says why.
  let socketError: Error | undefined;
  redis.on('error', (error: Error) => (socketError ??= error));
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw socketError ?? error;
  } finally {
    redis.disconnect();
  }
}

/** A Redis Cluster is reachable when one of its listed nodes answers: the client finds the rest from it. */
async function reachRedisCluster(nodes: string): Promise<void> {
  let firstError: unknown;
  for (const node of redisClusterNodes(nodes) ?? []) {
    try {
      return await reachRedis(node);
    } catch (error) {
      firstError ??= error;
    }
  }
  throw firstError;
}

/**
 * Before anything boots: the configured servers answer. One that does not stops the start with one
 * line naming its variable, instead of the framework's retry lines and a driver's stack trace.
 */
export async function checkServersOrExit(config: AppConfig): Promise<void> {
  const checks: [string, string | undefined, (url: string) => Promise<void>][] = [
    ['DATABASE_URL', config.DATABASE_URL, reachPostgres],
    ['REDIS_URL', config.REDIS_URL, reachRedis],
    ['REDIS_CLUSTER_NODES', config.REDIS_CLUSTER_NODES, reachRedisCluster],
  ];
  for (const [name, url, reach] of checks) {
    if (!url) continue;
    try {
      await reach(url);
    } catch (error) {
      const reason = (error as Error).message.split('\n')[0] || (error as Error).name;
      console.error(`${name}: cannot connect to ${displayUrl(url)} (${reason})`);
      process.exit(1);
    }
  }
}
