import { join, resolve } from 'node:path';
import { configNamespace } from './config-namespace';
import { trustProxySetting } from './environment';

/*
 * Every configuration slice, by the module that reads it. Variables, rules and defaults are in
 * environment.ts (validated once, at start); these only give them the names their readers use.
 */

export const httpConfig = configNamespace('http', (env) => ({
  port: env.PORT,
  host: env.HOST,
  /** Express `trust proxy`, already validated. */
  trustProxy: trustProxySetting(env.TRUST_PROXY) as boolean | number | string[],
}));

export const loggingConfig = configNamespace('logging', (env) => ({
  level: env.LOG_LEVEL,
  // Read once at start: whether a person is watching the output.
  pretty:
    env.LOG_FORMAT === 'pretty' ||
    (env.LOG_FORMAT === 'auto' && Boolean(process.stdout.isTTY) && env.NODE_ENV !== 'production'),
}));

export const lifecycleConfig = configNamespace('lifecycle', (env) => ({
  shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
  shutdownDrainMs: env.SHUTDOWN_DRAIN_MS,
}));

/**
 * Pooled connections the task worker of a process uses at most: WORKER_DATABASE_CONNECTIONS, and no more
 * than the runs it may have in flight. A run holds a connection only for its own short statements (its
 * agent's row, its attachments, its reports), never while its agent works; the worker's shared statements
 * are batched (one claim, one lease renewal of every running task per heartbeat, the outcomes finishing
 * together in one transaction). So the in-flight count is bounded by memory, and its statements queue for
 * these few connections (TaskWorker) instead of growing the pool with it: hundreds of connections per
 * process would exhaust PostgreSQL's max_connections across instances and starve requests of the pool
 * that they share.
 */

const taskWorkerConnections = (env: {
  WORKER_CONCURRENCY: number;
  WORKER_DATABASE_CONNECTIONS: number;
}): number => Math.min(env.WORKER_CONCURRENCY, env.WORKER_DATABASE_CONNECTIONS);

export const databaseConfig = configNamespace('database', (env) => ({
  /** Unset: the embedded PGlite under `dataDir`. */
  url: env.DATABASE_URL,
  /** Where sessions of their own go (LISTEN, migrations): PostgreSQL itself, past a pooler (DATABASE_POOLER). */
  directUrl: env.DATABASE_DIRECT_URL ?? env.DATABASE_URL,
  pooler: env.DATABASE_POOLER,
  /** Connections kept for requests; background workers get theirs on top (see DatabaseModule). */
  poolSize: env.DATABASE_POOL_SIZE,
  backgroundConnections: taskWorkerConnections(env) + env.WEBHOOK_WORKERS,
  statementTimeoutMs: env.DATABASE_STATEMENT_TIMEOUT_MS,
  dataDir: env.DATA_DIR,
}));

/** REDIS_CLUSTER_NODES's nodes, each a redis:// (or rediss://) URL: `host:port` is `redis://host:port`. */
export function redisClusterNodes(value: string | undefined): string[] | undefined {
  return value
    ?.split(',')
    .map((node) => node.trim())
    .map((node) => (/^rediss?:\/\//.test(node) ? node : `redis://${node}`));
}

export const redisConfig = configNamespace('redis', (env) => ({
  url: env.REDIS_URL,
  /** REDIS_CLUSTER_NODES as a list of URLs (undefined: not a cluster). */
  clusterNodes: redisClusterNodes(env.REDIS_CLUSTER_NODES),
  commandTimeoutMs: env.REDIS_COMMAND_TIMEOUT_MS,
  keyPrefix: env.REDIS_KEY_PREFIX,
}));

export const secretsConfig = configNamespace('secrets', (env) => ({
  tokenSigningSecret: env.TOKEN_SIGNING_SECRET,
  apiKeyHashSecret: env.API_KEY_HASH_SECRET,
  auditChainSecret: env.AUDIT_CHAIN_SECRET,
}));

export const authConfig = configNamespace('auth', (env) => ({
  accessTokenTtlSeconds: env.ACCESS_TOKEN_TTL_SECONDS,
  allowSignup: env.ALLOW_SIGNUP,
  loginMaxFailures: env.LOGIN_MAX_FAILURES,
  loginFailureWindowSeconds: env.LOGIN_FAILURE_WINDOW_SECONDS,
}));

export const accountsConfig = configNamespace('accounts', (env) => ({
  bcryptRounds: env.BCRYPT_ROUNDS,
  bootstrap: {
    email: env.BOOTSTRAP_ADMIN_EMAIL,
    password: env.BOOTSTRAP_ADMIN_PASSWORD,
    organizationName: env.BOOTSTRAP_ORGANIZATION_NAME,
  },
}));

export const apiKeysConfig = configNamespace('apiKeys', (env) => ({
  prefix: env.API_KEY_PREFIX,
  expiryScanSeconds: env.KEY_EXPIRY_SCAN_SECONDS,
  expiryWarningDays: env.EXPIRY_WARNING_DAYS,
  rotationScanSeconds: env.ROTATION_SCAN_SECONDS,
}));

export const usageConfig = configNamespace('usage', (env) => ({
  retentionDays: env.USAGE_RETENTION_DAYS,
}));

export const accessConfig = configNamespace('access', (env) => ({
  allowQueryApiKey: env.ALLOW_QUERY_API_KEY,
  maxConcurrentRequestsPerKey: env.MAX_CONCURRENT_REQUESTS_PER_KEY,
}));

export const rateLimitsConfig = configNamespace('rateLimits', (env) => ({
  defaultPerMinute: env.DEFAULT_REQUESTS_PER_MINUTE,
  defaultPerHour: env.DEFAULT_REQUESTS_PER_HOUR,
  failureMode: env.RATE_LIMIT_FAILURE_MODE,
  window: env.RATE_LIMIT_WINDOW,
}));

export const auditConfig = configNamespace('audit', (env) => ({
  denialWindowSeconds: env.AUDIT_DENIAL_WINDOW_SECONDS,
  integrityPageSize: env.AUDIT_INTEGRITY_PAGE_SIZE,
}));

export const filesConfig = configNamespace('files', (env) => ({
  directory: join(env.DATA_DIR, 'files'),
  maxFileSize: env.MAX_FILE_SIZE,
}));

export const outboundConfig = configNamespace('outbound', (env) => ({
  allowPrivateNetworkTargets: env.ALLOW_PRIVATE_NETWORK_TARGETS,
  timeoutMs: env.OUTBOUND_TIMEOUT_MS,
}));

/** Model (llm) agents' runs. */
export const llmAgentsConfig = configNamespace('llmAgents', (env) => ({
  maxAttachmentBytes: env.LLM_MAX_ATTACHMENT_BYTES,
}));

export const leakedKeysConfig = configNamespace('leakedKeys', (env) => ({
  secretScanningKeysUrl: env.SECRET_SCANNING_KEYS_URL,
  revokeRequestsPerMinute: env.CREDENTIAL_REVOKE_REQUESTS_PER_MINUTE,
}));

export const tasksConfig = configNamespace('tasks', (env) => ({
  workerConcurrency: env.WORKER_CONCURRENCY,
  /** The worker's statements in flight at once: its share of the pool (WORKER_DATABASE_CONNECTIONS). */
  databaseConnections: Math.max(1, taskWorkerConnections(env)),
  pollMs: env.WORKER_POLL_MS,
  leaseMs: env.TASK_LEASE_MS,
  maxAttempts: env.TASK_MAX_ATTEMPTS,
}));

export const webhooksConfig = configNamespace('webhooks', (env) => ({
  workers: env.WEBHOOK_WORKERS,
  pollMs: env.WORKER_POLL_MS,
  retryScheduleSeconds: env.WEBHOOK_RETRY_SCHEDULE_SECONDS.split(',').map(Number),
  disableAfterFailures: env.WEBHOOK_DISABLE_AFTER_FAILURES,
}));

export const metricsConfig = configNamespace('metrics', (env) => ({
  /** Unset: /metrics answers 404. */
  token: env.METRICS_TOKEN,
}));

export const sessionsConfig = configNamespace('sessions', (env) => ({
  idleMinutes: env.DASHBOARD_IDLE_MINUTES,
  absoluteHours: env.DASHBOARD_SESSION_HOURS,
}));

// Two levels up from src/config (ts-node, jest) and from dist/config (the build) alike.
const PROJECT_ROOT = join(__dirname, '..', '..');

export const dashboardConfig = configNamespace('dashboard', (env) => ({
  directory: env.DASHBOARD_DIR ? resolve(env.DASHBOARD_DIR) : join(PROJECT_ROOT, 'dist', 'dashboard'),
}));

/** PUBLIC_URL, or where this process listens on localhost: the base of every URL the service advertises. */
export const publicConfig = configNamespace('public', (env) => ({
  url: env.PUBLIC_URL ?? `http://localhost:${env.PORT}`,
}));

export const mcpConfig = configNamespace('mcp', (env) => ({
  allowedOrigins: env.MCP_ALLOWED_ORIGINS.split(',')
    .map((origin) => origin.trim())
    .filter(Boolean),
  maxUploadBytes: env.MCP_MAX_UPLOAD_BYTES,
}));

export const oauthConfig = configNamespace('oauth', (env) => ({
  defaultScopes: env.OAUTH_DEFAULT_SCOPES.split(' '),
  registrationsPerHour: env.OAUTH_REGISTRATIONS_PER_HOUR,
  requestsPerMinute: env.OAUTH_REQUESTS_PER_MINUTE ?? env.DEFAULT_REQUESTS_PER_MINUTE,
  requestsPerHour: env.OAUTH_REQUESTS_PER_HOUR ?? env.DEFAULT_REQUESTS_PER_HOUR,
}));

export const CONFIG_NAMESPACES = [
  httpConfig,
  loggingConfig,
  lifecycleConfig,
  databaseConfig,
  redisConfig,
  secretsConfig,
  authConfig,
  accountsConfig,
  apiKeysConfig,
  usageConfig,
  accessConfig,
  rateLimitsConfig,
  auditConfig,
  filesConfig,
  outboundConfig,
  llmAgentsConfig,
  leakedKeysConfig,
  tasksConfig,
  webhooksConfig,
  metricsConfig,
  sessionsConfig,
  dashboardConfig,
  publicConfig,
  mcpConfig,
  oauthConfig,
];
