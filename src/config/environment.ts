import { plainToInstance, Transform } from 'class-transformer';
import { compile as compileProxyList } from 'proxy-addr';
import {
  IsBoolean,
  IsEmail,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  validateSync,
} from 'class-validator';

/*
 * The conversions of a variable's text before its rules check it, for `@Transform(...)`. Exported for
 * the rules an extension declares (src/config/extension-config.ts), so its numbers, booleans and
 * empty values read as the core's do.
 */
export const toInt = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
export const toBool = ({ value }: { value: unknown }): unknown => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes'].includes(v)) return true;
  if (['false', '0', 'no'].includes(v)) return false;
  return value;
};
export const emptyAsUnset = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' && value.trim() === '' ? undefined : value;

/**
 * Every environment variable the service reads, with its rule and default. `.env.example` mirrors it.
 * Validation happens once, at start; a bad value stops the process with a message naming the variable.
 */
export class EnvironmentVariables {
  @IsIn(['development', 'production', 'test'])
  NODE_ENV: 'development' | 'production' | 'test' = 'development';

  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  @IsString()
  HOST = '0.0.0.0';

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** auto: readable lines on a terminal outside production, JSON lines otherwise. */
  @IsIn(['auto', 'json', 'pretty'])
  LOG_FORMAT: 'auto' | 'json' | 'pretty' = 'auto';

  @Transform(emptyAsUnset)
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'DATABASE_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_URL?: string;

  /**
   * What DATABASE_URL reaches: PostgreSQL itself (`none`), or a pooler in transaction mode (`transaction`:
   * PgBouncer's pool_mode=transaction, RDS Proxy, Supabase's pooler), which shares server sessions
   * between transactions. Then what needs a session of its own (LISTEN, the migrations and their advisory
   * lock) uses DATABASE_DIRECT_URL, and the statement deadline is the role's default in the database
   * (set at start through DATABASE_DIRECT_URL) instead of a startup parameter, which poolers refuse; a
   * pooler's server connections opened before a change keep the old one until they are reopened.
   */
  @IsIn(['none', 'transaction'])
  DATABASE_POOLER: 'none' | 'transaction' = 'none';

  /**
   * A URL that reaches PostgreSQL directly (not through the pooler), for what needs a session: required
   * with DATABASE_POOLER=transaction. Unset: DATABASE_URL.
   */
  @Transform(emptyAsUnset)
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/\S+$/, {
    message: 'DATABASE_DIRECT_URL must be a postgres:// or postgresql:// URL',
  })
  DATABASE_DIRECT_URL?: string;

  /**
   * Connections kept for requests. The pool holds this many plus the task worker's own
   * (WORKER_DATABASE_CONNECTIONS) and one per webhook loop, so background work can never starve requests.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(200)
  DATABASE_POOL_SIZE = 10;

  /**
   * Deadline of one SQL statement, in milliseconds (PostgreSQL's statement_timeout; past it the request
   * answers 503). Migrations and the embedded database run without it. 0 turns it off.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(3600000)
  DATABASE_STATEMENT_TIMEOUT_MS = 5000;

  @IsString()
  @MinLength(1)
  DATA_DIR = './data';

  @Transform(emptyAsUnset)
  @IsOptional()
  @Matches(/^rediss?:\/\/\S+$/, { message: 'REDIS_URL must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  /**
   * A Redis Cluster instead of one Redis (ElastiCache or MemoryDB in cluster mode, Redis Enterprise's OSS
   * cluster API): a comma-separated list of some of its nodes, each `redis://host:port` (or `rediss://`,
   * or `host:port`); the client finds the rest. Every script's keys share a hash slot by design (the
   * organization's), so each runs on one shard. Instead of REDIS_URL, not beside it.
   */
  @Transform(emptyAsUnset)
  @IsOptional()
  @Matches(/^((rediss?:\/\/)?[^\s,]+:\d+)(,\s*(rediss?:\/\/)?[^\s,]+:\d+)*$/, {
    message: 'REDIS_CLUSTER_NODES must be a comma-separated list of redis://host:port (or host:port) nodes',
  })
  REDIS_CLUSTER_NODES?: string;

  /**
   * Deadline of every Redis command, in milliseconds. A command that misses it fails, and the connection
   * is treated as down (requests then see what they see with Redis stopped) until a reconnect answers.
   */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(5000)
  REDIS_COMMAND_TIMEOUT_MS = 500;

  /**
   * Put before every Redis key and the invalidation channel, so deployments (or test databases) that share
   * one Redis do not share counters, balances or invalidations. Instances of one deployment use the same.
   */
  @Matches(/^[\w:.-]{0,64}$/, {
    message: 'REDIS_KEY_PREFIX must be at most 64 letters, digits or _ : . -',
  })
  REDIS_KEY_PREFIX = '';

  /** Signs access tokens. Generated and kept under DATA_DIR when unset outside production. */
  @Transform(emptyAsUnset)
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'TOKEN_SIGNING_SECRET must be at least 32 characters' })
  TOKEN_SIGNING_SECRET?: string;

  /** Keys API key hashes (HMAC-SHA256). Same rule as the signing secret; changing it invalidates every key. */
  @Transform(emptyAsUnset)
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'API_KEY_HASH_SECRET must be at least 32 characters' })
  API_KEY_HASH_SECRET?: string;

  /**
   * Keys the audit log's chain (HMAC-SHA256 of each entry's link, of the chain's head and of exported
   * checkpoints): someone who can write to the database but does not hold it cannot rewrite, forge or
   * cut off entries unseen. Same rule as the other secrets; changing it makes every entry written
   * under the old one fail verification, so it is kept, like API_KEY_HASH_SECRET.
   */
  @Transform(emptyAsUnset)
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'AUDIT_CHAIN_SECRET must be at least 32 characters' })
  AUDIT_CHAIN_SECRET?: string;

  @Transform(toInt)
  @IsInt()
  @Min(60)
  @Max(86400)
  ACCESS_TOKEN_TTL_SECONDS = 900;

  @Transform(toInt)
  @IsInt()
  @Min(4)
  @Max(15)
  BCRYPT_ROUNDS = 10;

  @Transform(emptyAsUnset)
  @IsOptional()
  @IsEmail({}, { message: 'BOOTSTRAP_ADMIN_EMAIL must be an email address' })
  BOOTSTRAP_ADMIN_EMAIL?: string;

  @Transform(emptyAsUnset)
  @IsOptional()
  @IsString()
  @MinLength(8, { message: 'BOOTSTRAP_ADMIN_PASSWORD must be at least 8 characters' })
  @MaxLength(72, { message: 'BOOTSTRAP_ADMIN_PASSWORD must be at most 72 characters' })
  BOOTSTRAP_ADMIN_PASSWORD?: string;

  @IsString()
  @MinLength(1)
  @MaxLength(100)
  BOOTSTRAP_ORGANIZATION_NAME = 'Default organization';

  @Transform(toBool)
  @IsBoolean({ message: 'ALLOW_SIGNUP must be true or false' })
  ALLOW_SIGNUP = false;

  /** `?api_key=` is accepted unless switched off; it is never logged either way. */
  @Transform(toBool)
  @IsBoolean({ message: 'ALLOW_QUERY_API_KEY must be true or false' })
  ALLOW_QUERY_API_KEY = true;

  /** Key values look like `<prefix>_…`; changing it makes existing keys unrecognisable. */
  @Matches(/^[a-z]{2,8}$/, { message: 'API_KEY_PREFIX must be 2-8 lowercase letters' })
  API_KEY_PREFIX = 'sk';

  /** Refusals of one key for one reason are coalesced into one audit entry per window. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3600)
  AUDIT_DENIAL_WINDOW_SECONDS = 60;

  /**
   * Entries `GET /v1/audit-log/integrity` reads per statement: the check walks the chain a page at a
   * time, so its memory and each statement's time do not grow with the log.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10000)
  AUDIT_INTEGRITY_PAGE_SIZE = 250;

  /** How often expired keys are looked for, to record `key.expired` once each. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3600)
  KEY_EXPIRY_SCAN_SECONDS = 60;

  /**
   * Express `trust proxy`: unset/false trusts no proxy (the socket address is the client, so
   * X-Forwarded-For cannot spoof it); true, a hop count, or a comma list of proxy addresses/CIDRs
   * (or loopback, linklocal, uniquelocal) trusts those.
   */
  @Transform(emptyAsUnset)
  @IsOptional()
  @IsString()
  TRUST_PROXY?: string;

  /** Per-key limits when a key sets none. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000000)
  DEFAULT_REQUESTS_PER_MINUTE = 600;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(60000000)
  DEFAULT_REQUESTS_PER_HOUR = 20000;

  /** Requests of one key in flight at once (per instance). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10000)
  MAX_CONCURRENT_REQUESTS_PER_KEY = 20;

  /** With Redis unreachable: `open` lets requests through (logged), `closed` answers 503. */
  @IsIn(['open', 'closed'])
  RATE_LIMIT_FAILURE_MODE: 'open' | 'closed' = 'open';

  /**
   * How the per-minute and per-hour limits count: `sliding` (a sliding-window counter: no twice-the-limit
   * burst across a window's edge) or `fixed` (counts that reset when each window ends).
   */
  @IsIn(['sliding', 'fixed'])
  RATE_LIMIT_WINDOW: 'sliding' | 'fixed' = 'sliding';

  /** `key.expiring` is recorded this many days before a key expires. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(365)
  EXPIRY_WARNING_DAYS = 7;

  /** Per-key usage (hourly counts) is kept this many days. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3650)
  USAGE_RETENTION_DAYS = 90;

  /** How often due rotation policies and expiry warnings are looked for. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3600)
  ROTATION_SCAN_SECONDS = 60;

  /** Largest accepted upload, in bytes (default 100 MiB). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1099511627776)
  MAX_FILE_SIZE = 104857600;

  /** Outbound calls (http agents, webhooks) may reach loopback/private/link-local addresses only when true. */
  @Transform(toBool)
  @IsBoolean({ message: 'ALLOW_PRIVATE_NETWORK_TARGETS must be true or false' })
  ALLOW_PRIVATE_NETWORK_TARGETS = false;

  /** Timeout of one outbound call, in milliseconds. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(300000)
  OUTBOUND_TIMEOUT_MS = 10000;

  /**
   * Text an llm agent's run sends of its task's attachments, in bytes in all; the attachment that passes
   * it is cut short and named as truncated, later ones are named and not sent.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(104857600)
  LLM_MAX_ATTACHMENT_BYTES = 1048576;

  /**
   * Where GitHub's secret-scanning public keys are read (POST /v1/secret-scanning/github checks report
   * signatures with them). The operator's own setting, so a mirror on a private address is allowed.
   */
  @IsUrl(
    { protocols: ['http', 'https'], require_tld: false, require_protocol: true },
    { message: 'SECRET_SCANNING_KEYS_URL must be an http(s) URL' },
  )
  SECRET_SCANNING_KEYS_URL = 'https://api.github.com/meta/public_keys/secret_scanning';

  /** POST /v1/credentials/revoke calls per client address and minute (public: anyone may report a key). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10000)
  CREDENTIAL_REVOKE_REQUESTS_PER_MINUTE = 10;

  /**
   * Task runs in flight at once in this process (0: this process only serves the API). Agents are
   * I/O-bound: a run waiting on its agent holds no database connection and costs a few tens of KiB, so
   * this is bounded by memory, not by the pool. An agent's `max_concurrency` caps its own share.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10000)
  WORKER_CONCURRENCY = 512;

  /**
   * Connections of the pool the task worker's statements use at most, whatever WORKER_CONCURRENCY is
   * (fewer when WORKER_CONCURRENCY is smaller): claims, a run's reports and outcomes queue for them
   * instead of growing the pool with the runs in flight. 8 keeps 200 model runs in flight at 85 runs/s on
   * one instance (bench:llm; 4 held it at 73, its reports and outcomes queued); each instance holds
   * DATABASE_POOL_SIZE + this + WEBHOOK_WORKERS connections of PostgreSQL's max_connections.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(64)
  WORKER_DATABASE_CONNECTIONS = 8;

  /** How often an idle worker looks for work, and how long a claimed task's lease lasts. */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(60000)
  WORKER_POLL_MS = 500;

  /**
   * A running task's lease, renewed every quarter of it: a worker that dies leaves its tasks to the
   * others within about this long (the contract's 10 s with the default).
   */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(3600000)
  TASK_LEASE_MS = 8000;

  /** Attempts before a failing task is marked failed. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(20)
  TASK_MAX_ATTEMPTS = 3;

  /** Webhook delivery loops in this process (0: deliveries are left to other instances). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(16)
  WEBHOOK_WORKERS = 1;

  /**
   * Delay before each retry of a failed delivery, in seconds (jittered ±20%). The default spans about
   * a day: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
   */
  @Matches(/^\d+(,\d+)*$/, { message: 'WEBHOOK_RETRY_SCHEDULE_SECONDS must be a comma list of seconds' })
  WEBHOOK_RETRY_SCHEDULE_SECONDS = '5,300,1800,7200,18000,36000,36000';

  /** Consecutive failed attempts after which an endpoint is disabled. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10000)
  WEBHOOK_DISABLE_AFTER_FAILURES = 50;

  /** Free failed sign-ins of an account from one address (4x per address, 20x per account) before growing waits. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  LOGIN_MAX_FAILURES = 5;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(86400)
  LOGIN_FAILURE_WINDOW_SECONDS = 900;

  /**
   * How long a stopping process has, from its SIGTERM or SIGINT, to drain, finish what is in flight and
   * write what waits; past it, it exits 1.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(600000)
  SHUTDOWN_GRACE_MS = 10000;

  /**
   * On SIGTERM, how long the API keeps serving with `GET /health/ready` answering 503 (and every answer
   * closing its connection) before it closes its port: a load balancer's health checks take it out of
   * rotation meanwhile, so no client meets a closed port. Set it above the balancer's check interval times
   * its unhealthy threshold (the image sets 5000). Less than SHUTDOWN_GRACE_MS; SIGINT does not wait.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(600000)
  SHUTDOWN_DRAIN_MS = 0;

  /**
   * A dashboard session ends when its refresh cookie has not been used for this long. The page refreshes
   * its access token when it needs one, so a value below ACCESS_TOKEN_TTL_SECONDS also shortens tokens.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1440)
  DASHBOARD_IDLE_MINUTES = 30;

  /** A dashboard session ends this long after sign-in, however active (the cookie's Max-Age). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(720)
  DASHBOARD_SESSION_HOURS = 12;

  /** The built dashboard (index.html and assets/) served at /dashboard; unset: <project root>/dist/dashboard. */
  @Transform(emptyAsUnset)
  @IsOptional()
  @IsString()
  DASHBOARD_DIR?: string;

  /**
   * The service's public base URL (scheme, host, optional port and path, no trailing slash): every URL the
   * service advertises (OAuth issuer and endpoints, the MCP resource and its metadata) is built from it.
   * Unset: http://localhost:<PORT>.
   */
  @Transform(emptyAsUnset)
  @IsOptional()
  @Matches(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*[^\s?#/])?$/, {
    message: 'PUBLIC_URL must be an http(s) URL without query, fragment or trailing slash',
  })
  PUBLIC_URL?: string;

  /** Browser origins allowed to call /mcp (comma list); a request with any other Origin is refused (403). */
  @IsString()
  MCP_ALLOWED_ORIGINS = '';

  /** Largest file upload_file takes over MCP, in decoded bytes; /mcp takes bodies of its base64 size. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(104857600)
  MCP_MAX_UPLOAD_BYTES = 10485760;

  /** What an OAuth client gets when it asks for no scope: permission names separated by spaces. */
  @Matches(/^[a-z_]+:[a-z_]+( [a-z_]+:[a-z_]+)*$/, {
    message: 'OAUTH_DEFAULT_SCOPES must be permission names separated by spaces',
  })
  OAUTH_DEFAULT_SCOPES = 'agents:read tasks:create tasks:read files:read files:create';

  /** Dynamic client registrations per client address per hour; beyond, 429. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100000)
  OAUTH_REGISTRATIONS_PER_HOUR = 30;

  /** Requests of one OAuth grant per minute and per hour; unset: DEFAULT_REQUESTS_PER_MINUTE / _HOUR. */
  @Transform(emptyAsUnset)
  @Transform(toInt)
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1000000)
  OAUTH_REQUESTS_PER_MINUTE?: number;

  @Transform(emptyAsUnset)
  @Transform(toInt)
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(60000000)
  OAUTH_REQUESTS_PER_HOUR?: number;

  /** The operator's bearer secret for GET /metrics; unset, /metrics is off (404). */
  @Transform(emptyAsUnset)
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'METRICS_TOKEN must be at least 16 characters' })
  METRICS_TOKEN?: string;

  /**
   * OpenTelemetry: the OTLP/HTTP endpoint (`/v1/traces` and `/v1/metrics` are added) the API and the
   * worker export traces and metrics to. Unset: no telemetry, and none of the SDK is loaded. The SDK's
   * other OTEL_* variables that Gatehouse reads: OTEL_SERVICE_NAME (default gatehouse-api or
   * gatehouse-worker), OTEL_TRACES_SAMPLER=parentbased_traceidratio with OTEL_TRACES_SAMPLER_ARG (the
   * share of requests traced; default every one, which costs most: bench:tracing),
   * OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_SCHEDULE_DELAY, OTEL_METRIC_EXPORT_INTERVAL and OTEL_SDK_DISABLED.
   */
  @Transform(emptyAsUnset)
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL' })
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
}

/** TRUST_PROXY as Express wants it: boolean, hop count, or a validated address list. */
export function trustProxySetting(value: string | undefined): boolean | number | string[] | Error {
  if (value === undefined) return false;
  const v = value.trim().toLowerCase();
  if (v === 'true') return true;
  if (v === 'false') return false;
  if (/^\d+$/.test(v)) return Number(v);
  const entries = v
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  try {
    compileProxyList(entries);
  } catch (error) {
    return new Error(
      `must be true, false, a hop count or a list of addresses/CIDRs (${(error as Error).message})`,
    );
  }
  return entries;
}

export class ConfigurationError extends Error {
  constructor(readonly problems: string[]) {
    // One line per bad variable, each naming it: what a person reads first when the start fails.
    super(problems.map((problem) => `Invalid configuration: ${problem}`).join('\n'));
    this.name = 'ConfigurationError';
  }
}

// Values that are obviously copied from an example; refused in production.
const PLACEHOLDER = /change[-_ ]?me|placeholder|example|^secret$|^password$|xxxx|todo|replace/i;
const SECRET_VARIABLES = ['TOKEN_SIGNING_SECRET', 'API_KEY_HASH_SECRET', 'AUDIT_CHAIN_SECRET'] as const;

/** Variables with no default: a fresh EnvironmentVariables has no key for them. */
export const OPTIONAL_WITHOUT_DEFAULT: readonly string[] = [
  'DATABASE_URL',
  'DATABASE_DIRECT_URL',
  'REDIS_URL',
  'REDIS_CLUSTER_NODES',
  ...SECRET_VARIABLES,
  'BOOTSTRAP_ADMIN_EMAIL',
  'BOOTSTRAP_ADMIN_PASSWORD',
  'TRUST_PROXY',
  'METRICS_TOKEN',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'DASHBOARD_DIR',
  'PUBLIC_URL',
  'OAUTH_REQUESTS_PER_MINUTE',
  'OAUTH_REQUESTS_PER_HOUR',
];

// A value of the wrong kind first ("must be an integer"), then its range: 'abc' for PORT is not
// "greater than 65535", and three messages for one variable read as three problems.
const CONSTRAINT_ORDER = ['isInt', 'isBoolean', 'isIn', 'matches', 'isEmail', 'isString'];

function mostTellingMessage(constraints: Record<string, string>): string {
  const first = CONSTRAINT_ORDER.find((name) => name in constraints);
  return first ? constraints[first] : Object.values(constraints)[0];
}

/** The variables the core reads: every one `.env.example` lists for it. */
export const CORE_VARIABLES: readonly string[] = [
  ...new Set([...Object.keys(new EnvironmentVariables()), ...OPTIONAL_WITHOUT_DEFAULT]),
];

/**
 * `names` of `raw` read into a `Variables` (a class of rules like EnvironmentVariables: a default and
 * class-validator rules per variable), with one problem per bad variable, each naming it. Variables
 * not in `names` are left out: they are someone else's.
 */
export function readVariables<V extends object>(
  Variables: new () => V,
  names: readonly string[],
  raw: Record<string, string | undefined>,
): { values: V; problems: string[] } {
  const given = Object.fromEntries(
    names.filter((name) => raw[name] !== undefined).map((name) => [name, raw[name]]),
  );
  const values = plainToInstance(Variables, given);
  const problems = validateSync(values, { forbidUnknownValues: false }).map((error) => {
    const message = mostTellingMessage(error.constraints ?? {});
    return message.startsWith(error.property) ? message : `${error.property}: ${message}`;
  });
  return { values, problems };
}

export function validateEnvironment(raw: Record<string, string | undefined>): EnvironmentVariables {
  const { values: env, problems } = readVariables(EnvironmentVariables, CORE_VARIABLES, raw);
  if (Boolean(env.BOOTSTRAP_ADMIN_EMAIL) !== Boolean(env.BOOTSTRAP_ADMIN_PASSWORD)) {
    problems.push('BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD must be set together');
  }
  if (env.TRUST_PROXY !== undefined && trustProxySetting(env.TRUST_PROXY) instanceof Error) {
    problems.push(`TRUST_PROXY: ${(trustProxySetting(env.TRUST_PROXY) as Error).message}`);
  }
  if (env.DATABASE_POOLER === 'transaction' && (!env.DATABASE_URL || !env.DATABASE_DIRECT_URL)) {
    problems.push(
      'DATABASE_POOLER=transaction needs DATABASE_URL (the pooler) and DATABASE_DIRECT_URL (PostgreSQL itself)',
    );
  }
  if (env.REDIS_URL && env.REDIS_CLUSTER_NODES) {
    problems.push('set REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster), not both');
  }
  if (env.SHUTDOWN_DRAIN_MS > 0 && env.SHUTDOWN_DRAIN_MS >= env.SHUTDOWN_GRACE_MS) {
    problems.push(
      'SHUTDOWN_DRAIN_MS must be less than SHUTDOWN_GRACE_MS (the drain counts within the grace period)',
    );
  }
  if (env.NODE_ENV === 'production') {
    for (const name of SECRET_VARIABLES) {
      const value = env[name];
      if (!value) problems.push(`${name} must be set when NODE_ENV=production`);
      else if (PLACEHOLDER.test(value)) problems.push(`${name} looks like a placeholder; set a real secret`);
    }
    if (env.BOOTSTRAP_ADMIN_PASSWORD && PLACEHOLDER.test(env.BOOTSTRAP_ADMIN_PASSWORD)) {
      problems.push('BOOTSTRAP_ADMIN_PASSWORD looks like a placeholder; set a real password');
    }
  }
  if (problems.length) throw new ConfigurationError(problems);
  return env;
}
