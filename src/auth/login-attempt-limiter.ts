import { ConfigOf } from '../config/config-namespace';
import { authConfig } from '../config/namespaces';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import type { RedisClient } from '../redis/redis.connection';
import { Clock } from '../common/clock';
import { RedisConnection } from '../redis/redis.connection';
import { AuthError, AuthErrorCode } from './auth.errors';

/** One counter of failed sign-ins: how many, and until when (Clock ms) the next attempt waits. */
interface Counter {
  failures: number;
  waitUntil: number;
  expiresAt: number;
}

/** The first wait once a counter's free failures are used; each further failure doubles it. */
const FIRST_DELAY_MS = 10_000;
// An address may fail more often than an account from one address: several people share one NAT.
const PER_ADDRESS_MULTIPLIER = 4;
// The account's own counter, whatever the address: high, so that failures sent from a few addresses
// cannot keep the owner out, and still there against guessing spread over many addresses.
const PER_ACCOUNT_MULTIPLIER = 20;
const MAX_TRACKED = 100_000;

/**
 * One failure on a counter, atomically: KEYS[1] is the counter, ARGV[1] the Clock's now (ms), ARGV[2]
 * the window (ms), ARGV[3] the counter's free failures. A counter past its free failures waits
 * FIRST_DELAY_MS doubled per further failure, at most the window; the window restarts at every failure,
 * so a counter is forgotten after a whole window without one. One key per call, named in
 * `numberOfKeys`: ioredis then knows the key, which a cluster needs to route it (and auto-pipelining
 * to group it by node).
 */
const RECORD_FAILURE_LUA = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local key = KEYS[1]
local failures = redis.call('HINCRBY', key, 'failures', 1)
local free = tonumber(ARGV[3])
if failures >= free then
  local delay = math.min(${FIRST_DELAY_MS} * 2 ^ (failures - free), window)
  redis.call('HSET', key, 'wait_until', string.format('%.0f', now + delay))
end
redis.call('PEXPIRE', key, window)
return 1
`;

type LimiterScripts = RedisClient & {
  gatehouseLoginFailure(key: string, now: number, windowMs: number, free: number): Promise<number>;
};

const sha256 = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');

/**
 * Slows password guessing without letting anyone lock an account's owner out (OWASP's authentication
 * cheat sheet: growing delays, not a hard lockout anyone can trigger). Three counters of failed
 * sign-ins: the account from one address (LOGIN_MAX_FAILURES free failures), the address whatever the
 * account (four times that) and the account whatever the address (twenty times that). Past its free
 * failures a counter makes the next attempt wait 10 s, doubled at each further failure, up to
 * LOGIN_FAILURE_WINDOW_SECONDS; an attempt made while waiting gets 429 with Retry-After and checks no
 * password. So whoever guesses slows themselves: the owner signing in from another address meets only
 * the account's own counter, which failures from one address alone cannot fill. A success clears the
 * counters of its account (never the address's: signing in to one's own account would otherwise reset
 * the guessing of others). Counted in Redis when REDIS_URL is set, so every instance counts together;
 * in this process otherwise, and while Redis cannot be reached. Times come from the Clock.
 */
@Injectable()
export class LoginAttemptLimiter {
  private readonly logger = new Logger(LoginAttemptLimiter.name);
  private readonly local = new Map<string, Counter>();
  private readonly redis?: LimiterScripts;

  constructor(
    @Inject(authConfig.KEY) private readonly config: ConfigOf<typeof authConfig>,
    private readonly clock: Clock,
    connection: RedisConnection,
  ) {
    if (connection.client) {
      connection.client.defineCommand('gatehouseLoginFailure', { numberOfKeys: 1, lua: RECORD_FAILURE_LUA });
      this.redis = connection.client as LimiterScripts;
    }
  }

  async assertAllowed(email: string, address: string): Promise<void> {
    const now = this.clock.now();
    const waitUntil = Math.max(...(await this.waitUntil(this.countersOf(email, address), now)));
    if (waitUntil > now) {
      throw new AuthError(
        AuthErrorCode.TooManyLoginAttempts,
        'Too many failed sign-in attempts; try again later.',
        { retryAfterSeconds: Math.max(1, Math.ceil((waitUntil - now) / 1000)) },
      );
    }
  }

  async recordFailure(email: string, address: string): Promise<void> {
    const counters = this.countersOf(email, address);
    const now = this.clock.now();
    const windowMs = this.config.loginFailureWindowSeconds * 1000;
    if (this.redis) {
      try {
        // One call per counter, sent in one turn (auto-pipelined: one round trip): the counters are of
        // unrelated keys, which a Redis Cluster keeps in different hash slots.
        await Promise.all(
          counters.map(({ key, free }) => this.redis!.gatehouseLoginFailure(key, now, windowMs, free)),
        );
        return;
      } catch (error) {
        this.warnFallback(error);
      }
    }
    for (const { key, free } of counters) {
      const counter = this.current(key, now) ?? { failures: 0, waitUntil: 0, expiresAt: 0 };
      counter.failures += 1;
      if (counter.failures >= free) {
        counter.waitUntil = now + Math.min(FIRST_DELAY_MS * 2 ** (counter.failures - free), windowMs);
      }
      counter.expiresAt = now + windowMs;
      this.local.set(key, counter);
    }
    if (this.local.size > MAX_TRACKED) this.evictExpired(now);
  }

  async recordSuccess(email: string, address: string): Promise<void> {
    const [pair, , account] = this.countersOf(email, address).map(({ key }) => key);
    for (const key of [pair, account]) this.local.delete(key);
    if (!this.redis) return;
    try {
      await Promise.all([this.redis.del(pair), this.redis.del(account)]);
    } catch (error) {
      this.warnFallback(error);
    }
  }

  /** The counters of an attempt: account from address, address, account; each with its free failures. */
  private countersOf(email: string, address: string): { key: string; free: number }[] {
    const account = sha256(email.trim().toLowerCase());
    const free = this.config.loginMaxFailures;
    return [
      { key: `login-failures:pair:${account}:${address}`, free },
      { key: `login-failures:address:${address}`, free: free * PER_ADDRESS_MULTIPLIER },
      { key: `login-failures:account:${account}`, free: free * PER_ACCOUNT_MULTIPLIER },
    ];
  }

  private async waitUntil(counters: { key: string }[], now: number): Promise<number[]> {
    if (this.redis) {
      try {
        const answers = await Promise.all(counters.map(({ key }) => this.redis!.hget(key, 'wait_until')));
        return answers.map((value) => Number(value ?? 0));
      } catch (error) {
        this.warnFallback(error);
      }
    }
    return counters.map(({ key }) => this.current(key, now)?.waitUntil ?? 0);
  }

  private warnFallback(error: unknown): void {
    this.logger.warn(
      `login failures counted in this process: Redis did not answer (${(error as Error).message})`,
    );
  }

  private current(key: string, now: number): Counter | undefined {
    const counter = this.local.get(key);
    if (counter && counter.expiresAt <= now) {
      this.local.delete(key);
      return undefined;
    }
    return counter;
  }

  private evictExpired(now: number): void {
    for (const [key, counter] of this.local) if (counter.expiresAt <= now) this.local.delete(key);
  }
}
