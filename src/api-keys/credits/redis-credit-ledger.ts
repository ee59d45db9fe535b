import { BeforeApplicationShutdown, Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import { ApiKeysRepository, CreditState } from '../api-keys.repository';
import { TickBatch } from '../../common/tick-batch';
import { CreditAccount, CreditLedger, grantedBalances, spendGroupedByKey } from './credit-ledger';

// One hash per key: g (generation of the settings), r (remaining), b (baseline for credits_low).
const balanceKey = (keyId: string) => `gatehouse:credits:${keyId}`;
// Idle balances leave Redis after a week; the next spend reseeds from the row, which by then holds it.
const IDLE_TTL_MS = 7 * 86_400_000;
// How soon a spend reaches the row: what a Redis restart (not a process restart) could forget.
const WRITE_BACK_DELAY_MS = 200;

/**
 * Spends up to ARGV[2] credits at once, never below zero: {granted, remaining after, g, b}, or {-1}
 * when Redis holds no balance of this generation (reseed from the row).
 */
const SPEND_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'g', 'r', 'b')
if not v[1] or tonumber(v[1]) < tonumber(ARGV[1]) then return {-1} end
local r = tonumber(v[2])
local n = math.min(tonumber(ARGV[2]), r)
if n > 0 then
  r = redis.call('HINCRBY', KEYS[1], 'r', -n)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
else
  n = 0
end
return {n, r, tonumber(v[1]), tonumber(v[3])}`;

/** Sets the balance unless Redis already holds one of the same or a newer generation. */
const SEED_SCRIPT = `
local g = redis.call('HGET', KEYS[1], 'g')
if g and tonumber(g) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'g', ARGV[1], 'r', ARGV[2], 'b', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`;

const REFUND_SCRIPT = `
if redis.call('HGET', KEYS[1], 'g') == ARGV[1] then redis.call('HINCRBY', KEYS[1], 'r', 1) end
return 1`;

interface CreditScripts {
  gatehouseSpendCredits(key: string, generation: number, count: number, ttl: number): Promise<number[]>;
  gatehouseSeedCredits(
    key: string,
    generation: number,
    remaining: number,
    baseline: number,
    ttl: number,
  ): Promise<number>;
  gatehouseRefundCredit(key: string, generation: number): Promise<number>;
}

/**
 * With Redis every instance spends from one balance per key, decremented by a Lua script that refuses
 * at zero (atomic, so two instances never accept more than the balance together); the spends of one
 * turn of the event loop share one call per key. Each spend is
 * written back to the row within WRITE_BACK_DELAY_MS, batched, so the balance survives a restart of
 * the process (Redis keeps it) and of Redis (the row reseeds it). A balance of an older generation is
 * never used: a PATCH or refill bumps the generation and reseeds at once.
 *
 * While Redis is unreachable, spends go to the row (exact among the instances doing so). Left as is:
 * if Redis comes back with its old data rather than empty, the spends made meanwhile are not in it.
 */
export class RedisCreditLedger extends CreditLedger implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Credits');
  private readonly scripts: CreditScripts;
  private readonly spends = new TickBatch<CreditAccount, CreditState | null>((accounts) =>
    spendGroupedByKey(accounts, (account, count) => this.spendMany(account, count)),
  );
  private pendingWriteBack = new Map<string, { keyId: string; generation: number; remaining: number }>();
  private writeBackTimer?: NodeJS.Timeout;
  private lastWarning = 0;

  constructor(
    private readonly redis: Redis,
    private readonly keys: ApiKeysRepository,
  ) {
    super();
    redis.defineCommand('gatehouseSpendCredits', { numberOfKeys: 1, lua: SPEND_SCRIPT });
    redis.defineCommand('gatehouseSeedCredits', { numberOfKeys: 1, lua: SEED_SCRIPT });
    redis.defineCommand('gatehouseRefundCredit', { numberOfKeys: 1, lua: REFUND_SCRIPT });
    this.scripts = redis as unknown as CreditScripts;
  }

  spend(account: CreditAccount): Promise<CreditState | null> {
    return this.spends.add(account);
  }

  /** `count` credits of one key: a balance for each one granted, in order, then nulls. */
  private async spendMany(account: CreditAccount, count: number): Promise<(CreditState | null)[]> {
    try {
      let answer = await this.spendScript(account, count);
      if (answer[0] === -1) {
        if (!(await this.reseed(account))) return [];
        answer = await this.spendScript(account, count);
        if (answer[0] === -1) return this.spendInDatabase(account, count);
      }
      const [granted, remaining, generation, baseline] = answer;
      const left = { remaining, generation, baseline };
      if (granted > 0) this.writeBack(account.keyId, left);
      return grantedBalances(granted, left);
    } catch (error) {
      this.warn(error as Error);
      return this.spendInDatabase(account, count);
    }
  }

  private spendScript({ keyId, generation }: CreditAccount, count: number): Promise<number[]> {
    return this.scripts.gatehouseSpendCredits(balanceKey(keyId), generation, count, IDLE_TTL_MS);
  }

  async refund(account: CreditAccount): Promise<void> {
    try {
      await this.scripts.gatehouseRefundCredit(balanceKey(account.keyId), account.generation);
    } catch (error) {
      this.warn(error as Error);
      await this.keys.refundCredit(account.keyId, account.generation);
    }
  }

  async publish(keyId: string, state: CreditState): Promise<void> {
    try {
      await this.seed(keyId, state);
    } catch (error) {
      // Others still see the new generation in their reloaded key records and reseed from the row.
      this.warn(error as Error);
    }
  }

  async balances(keys: readonly { keyId: string; state: CreditState }[]): Promise<Map<string, number>> {
    const balances = new Map(keys.map(({ keyId, state }) => [keyId, state.remaining]));
    if (!keys.length) return balances;
    try {
      const pipeline = this.redis.pipeline();
      for (const { keyId } of keys) pipeline.hmget(balanceKey(keyId), 'g', 'r');
      const answers = (await pipeline.exec()) ?? [];
      keys.forEach(({ keyId, state }, i) => {
        const [error, value] = answers[i] ?? [];
        const [generation, remaining] = (value ?? []) as (string | null)[];
        if (!error && generation !== null && remaining !== null && Number(generation) >= state.generation) {
          balances.set(keyId, Number(remaining));
        }
      });
    } catch (error) {
      this.warn(error as Error);
    }
    return balances;
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.flushWriteBack();
  }

  /** Redis lost the balance (restart, idle expiry) or holds an older one: seed it from the row. */
  private async reseed(account: CreditAccount): Promise<boolean> {
    await this.flushWriteBack();
    const state = await this.keys.readCredits(account.keyId);
    if (!state) return false;
    await this.seed(account.keyId, state);
    return true;
  }

  private seed(keyId: string, state: CreditState): Promise<number> {
    return this.scripts.gatehouseSeedCredits(
      balanceKey(keyId),
      state.generation,
      state.remaining,
      state.baseline,
      IDLE_TTL_MS,
    );
  }

  private async spendInDatabase(account: CreditAccount, count: number): Promise<(CreditState | null)[]> {
    await this.flushWriteBack();
    const spent = await this.keys.spendCredits(account.keyId, count);
    return spent ? grantedBalances(spent.granted, spent.left) : [];
  }

  private writeBack(keyId: string, state: CreditState): void {
    const pending = this.pendingWriteBack.get(keyId);
    if (!pending || state.generation > pending.generation || state.remaining < pending.remaining) {
      this.pendingWriteBack.set(keyId, { keyId, generation: state.generation, remaining: state.remaining });
    }
    if (!this.writeBackTimer) {
      this.writeBackTimer = setTimeout(() => void this.flushWriteBack(), WRITE_BACK_DELAY_MS);
      this.writeBackTimer.unref();
    }
  }

  private async flushWriteBack(): Promise<void> {
    clearTimeout(this.writeBackTimer);
    this.writeBackTimer = undefined;
    if (!this.pendingWriteBack.size) return;
    const batch = this.pendingWriteBack;
    this.pendingWriteBack = new Map();
    try {
      await this.keys.writeBackCredits([...batch.values()]);
    } catch (error) {
      // Kept for the next try (Redis still holds the live balance); newer spends win the merge.
      for (const [keyId, state] of batch)
        if (!this.pendingWriteBack.has(keyId)) this.pendingWriteBack.set(keyId, state);
      this.logger.warn(`could not write credit balances back: ${(error as Error).message}`);
      if (!this.writeBackTimer) {
        this.writeBackTimer = setTimeout(() => void this.flushWriteBack(), 1000);
        this.writeBackTimer.unref();
      }
    }
  }

  private warn(error: Error): void {
    if (Date.now() - this.lastWarning < 10_000) return;
    this.lastWarning = Date.now();
    this.logger.warn(`credits spent in the database, Redis unavailable: ${error.message}`);
  }
}
