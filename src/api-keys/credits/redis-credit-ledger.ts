import { BeforeApplicationShutdown, Logger } from '@nestjs/common';
import type { ConnectedRedis, RedisClient } from '../../redis/redis.connection';
import type { ServerRuns } from '../../redis/server-runs';
import { performance } from 'node:perf_hooks';
import type { CreditState } from './credit-balance-table';
import { TickBatch } from '../../common/tick-batch';
import {
  BalanceOf,
  CreditAccount,
  CreditLedger,
  CreditRide,
  CreditRowBalance,
  GrantedCredit,
  RideOutcome,
  grantedBalances,
  spendGroupedByKey,
} from './credit-ledger';
import { CreditTables } from './credit-tables';

// Idle balances leave Redis after a week; the next spend seeds a new epoch from the row.
const IDLE_TTL_MS = 7 * 86_400_000;
/** How long the row lets Redis spend an epoch's balance (PostgreSQL's clock), renewed while spent. */
const LEASE_MS = 800;
/** An instance stops spending in Redis this long before the row's lease ends: its last write-back lands meanwhile. */
const LEASE_MARGIN_MS = 300;
/** A spend is not sent to Redis on a lease with less than this to run (its answer would come too late). */
const SEND_SLACK_MS = 50;
/** How soon a spend made in Redis reaches the row (batched); well within LEASE_MARGIN_MS. */
const WRITE_BACK_DELAY_MS = 100;
/**
 * An instance that fails to reach Redis holds the balance in the row: no lease is renewed until it ran
 * out, and then the row stays the balance for this long after that instance's last claim (each claim
 * of an instance still failing renews it). Short, so Redis is spent again soon after every instance
 * reaches it; an instance cut off alone keeps it as long as it keeps spending.
 */
const HOLD_MS = 100;
/** A spend waiting for another instance's lease to run out looks again this often. */
const WAIT_STEP_MS = 50;
/** Leases run out within LEASE_MS once nobody renews them; waiting longer means something is wrong. */
const MAX_WAIT_MS = 5 * LEASE_MS;
/** An expired lease is kept this long as a hint of the epoch to renew; after, Redis is asked first. */
const HINT_MS = 600_000;
/** Leases kept at most (a memo: forgetting one costs a look at Redis). */
const MAX_LEASES = 100_000;

/**
 * Spends up to ARGV[3] credits (with ARGV[6] = 1, all of them or none) of epoch ARGV[1] seeded on run
 * ARGV[5], never below zero:
 * {granted, remaining after, g, b}; {-2, e, g} when Redis holds another epoch or an older generation
 * (ARGV[2] is the lowest acceptable) of this run; {-1} when it holds no balance of this run.
 */
const SPEND_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'g', 'r', 'b', 'e', 'u')
if not v[1] or not v[4] or v[5] ~= ARGV[5] then return {-1} end
if v[4] ~= ARGV[1] or tonumber(v[1]) < tonumber(ARGV[2]) then return {-2, tonumber(v[4]), tonumber(v[1])} end
local r = tonumber(v[2])
local n = math.min(tonumber(ARGV[3]), r)
if ARGV[6] == '1' and r < tonumber(ARGV[3]) then n = 0 end
if n > 0 then
  r = redis.call('HINCRBY', KEYS[1], 'r', -n)
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
else
  n = 0
end
return {n, r, tonumber(v[1]), tonumber(v[3])}`;

/**
 * Seeds epoch ARGV[1] of run ARGV[6] from the row. ARGV[7] = 1: a new epoch, unless Redis already
 * holds this or a newer one of the run. ARGV[7] = 0: a newer generation (a PATCH or refill Redis
 * missed) replaces the balance of this very epoch, which must still be there.
 */
const SEED_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'e', 'u', 'g')
local held = -1
if v[1] and v[2] == ARGV[6] then held = tonumber(v[1]) end
if ARGV[7] == '1' then
  if held >= tonumber(ARGV[1]) then return 0 end
elseif held ~= tonumber(ARGV[1]) or tonumber(v[3]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('HSET', KEYS[1], 'e', ARGV[1], 'u', ARGV[6], 'g', ARGV[2], 'r', ARGV[3], 'b', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

/** A balance set in the row (create, PATCH, refill) replaces an older generation's, in whatever epoch. */
const PUBLISH_SCRIPT = `
local g = redis.call('HGET', KEYS[1], 'g')
if not g or tonumber(g) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'g', ARGV[1], 'r', ARGV[2], 'b', ARGV[3])
return 1`;

/** Gives back ARGV[4] credits, only to the epoch, run and generation they were taken from. */
const REFUND_SCRIPT = `
local v = redis.call('HMGET', KEYS[1], 'e', 'u', 'g')
if v[1] == ARGV[1] and v[2] == ARGV[2] and v[3] == ARGV[3] then redis.call('HINCRBY', KEYS[1], 'r', ARGV[4]) end
return 1`;

/**
 * REFUND_SCRIPT once per settlement: KEYS[2] marks settlement ARGV[6] given back (kept ARGV[5] ms, as
 * long as an idle balance), so a settlement retried after a crash gives nothing twice.
 */
const REFUND_ONCE_SCRIPT = `
if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[5]) then return 0 end
local v = redis.call('HMGET', KEYS[1], 'e', 'u', 'g')
if v[1] == ARGV[1] and v[2] == ARGV[2] and v[3] == ARGV[3] then redis.call('HINCRBY', KEYS[1], 'r', ARGV[4]) end
return 1`;

/**
 * The ride (RideCarrier, rate-limits/window-counter.ts): credits spent in the script run that counts a
 * request's rate-limit windows, for each request every window let through, so that a request's windows
 * and balances take one round trip. KEYS from `first_key` are balances; ARGV from `first_arg`: the
 * count, the idle ttl, then for each balance the epoch, lowest generation and run of the lease this
 * instance holds (SPEND_SCRIPT's checks). `count` of every balance or none. A balance that is not that
 * copy makes the ride unusable, and nothing is spent: the instance spends the usual way (spendMany).
 * Per request let through: 1 value, -1, when unusable; else 1 + 3 per balance: 0 when spent, i when
 * balance i was short (nothing spent), then each balance's remaining, generation and baseline.
 */
const CREDIT_RIDER_LUA = `
local function begin_ride(first_key, first_arg)
  local count = tonumber(ARGV[first_arg])
  local ttl = ARGV[first_arg + 1]
  local balances = {}
  local usable = true
  for k = first_key, #KEYS do
    local a = first_arg + 2 + (k - first_key) * 3
    local v = redis.call('HMGET', KEYS[k], 'g', 'r', 'b', 'e', 'u')
    if not v[1] or not v[4] or v[5] ~= ARGV[a + 2] or v[4] ~= ARGV[a] or tonumber(v[1]) < tonumber(ARGV[a + 1]) then
      usable = false
    end
    balances[#balances + 1] = { key = KEYS[k], g = tonumber(v[1]), r = tonumber(v[2]), b = tonumber(v[3]), taken = 0 }
  end
  local function ride(counts, passed)
    if not passed then
      counts[#counts + 1] = 0
      return
    end
    if not usable then
      counts[#counts + 1] = 1
      counts[#counts + 1] = -1
      return
    end
    local outcome = 0
    for i, b in ipairs(balances) do
      if b.r < count then
        outcome = i
        break
      end
    end
    counts[#counts + 1] = 1 + 3 * #balances
    counts[#counts + 1] = outcome
    for _, b in ipairs(balances) do
      if outcome == 0 then
        b.r = b.r - count
        b.taken = b.taken + count
      end
      counts[#counts + 1] = b.r
      counts[#counts + 1] = b.g
      counts[#counts + 1] = b.b
    end
  end
  local function finish()
    for _, b in ipairs(balances) do
      if b.taken > 0 then
        redis.call('HINCRBY', b.key, 'r', -b.taken)
        redis.call('PEXPIRE', b.key, ttl)
      end
    end
  end
  return { ride = ride, finish = finish }
end
`;

/** A ride of this ledger: the leases it was prepared under. */
interface LeasedRide extends CreditRide {
  readonly leases: readonly Lease[];
}

interface CreditScripts {
  gatehouseSpendCredits(
    key: string,
    epoch: number,
    minGeneration: number,
    count: number,
    ttl: number,
    run: string,
    exact: 0 | 1,
  ): Promise<number[]>;
  gatehouseRefundCreditsOnce(
    key: string,
    marker: string,
    epoch: number,
    run: string,
    generation: number,
    count: number,
    ttl: number,
  ): Promise<number>;
  gatehouseSeedCredits(
    key: string,
    epoch: number,
    generation: number,
    remaining: number,
    baseline: number,
    ttl: number,
    run: string,
    fresh: 0 | 1,
  ): Promise<number>;
  gatehousePublishCredits(
    key: string,
    generation: number,
    remaining: number,
    baseline: number,
  ): Promise<number>;
  gatehouseRefundCredits(
    key: string,
    epoch: number,
    run: string,
    generation: number,
    count: number,
  ): Promise<number>;
}

/** This instance's right to spend a key's balance in Redis: its epoch, on which run, until when (performance.now()). */
interface Lease {
  epoch: number;
  run: string;
  until: number;
}

/** What Redis said of a key's balance before a claim: unreachable, or which epoch of this run it holds (-1: none). */
type RedisView = { failed: true } | { failed: false; epoch: number; generation: number };

/**
 * With Redis every instance spends from one balance per key, decremented by a Lua script that refuses
 * at zero (atomic, so two instances never accept more than the balance together); the spends of one
 * turn of the event loop share one call per key. Spends are written back to the row within
 * WRITE_BACK_DELAY_MS, batched, so the balance survives a restart of the process and of Redis.
 *
 * The invariant: at any moment exactly one copy of a key's balance is spent, Redis's or the row's,
 * and a hand-over between them never lets a credit be spent in both.
 * - The row names the live copy: `credits_epoch` is bumped at every hand-over, and
 *   `credits_lease_until` (PostgreSQL's clock) says until when Redis may spend that epoch; null means
 *   the row is the balance. Redis's hash carries the epoch and the run id of the server it was seeded
 *   on; a hash of another epoch or run is never spent.
 * - Redis is spent only under a lease, taken or renewed on the locked row (claimCredits, and every
 *   write-back). The instance counts it from before it sent that statement, minus LEASE_MARGIN_MS,
 *   on its monotonic clock, and uses an answer from Redis only if it arrived within: so every credit
 *   Redis grants is granted LEASE_MARGIN_MS before the row's lease ends, and its write-back (sent
 *   within WRITE_BACK_DELAY_MS) reaches the row before. A late answer counts as not granted and is
 *   given back.
 * - The row is spent only once the lease has run out; the first spend there bumps the epoch, so the
 *   balance Redis held is dead from then on, whatever Redis says when it answers again. An instance
 *   that cannot reach Redis (stopped, hung past its command deadline, breaker open, or an answer that
 *   never came: an ambiguous spend is not used) marks the row held until the lease runs out and
 *   HOLD_MS after, which stops every renewal: it waits at most LEASE_MS, then spends on the row, and
 *   so do the others once their leases run out.
 * - Redis is trusted again only through a new epoch seeded from the row (no instance held it for
 *   HOLD_MS, the lease ran out), or by joining the row's current epoch when Redis still holds exactly
 *   it on the same run. A restarted Redis has a new run id, so a balance it lost, restored from disk or
 *   had replayed by a reconnecting client is never joined; every instance also drops its leases when
 *   its connection closes.
 * Assumed: a write-back lands within LEASE_MARGIN_MS - WRITE_BACK_DELAY_MS of being sent (PostgreSQL
 * answering; a later one is logged), and no clock runs more than a few percent fast or slow.
 */
export class RedisCreditLedger extends CreditLedger implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Credits');
  private readonly scripts: CreditScripts;
  private readonly spends = new TickBatch<CreditAccount, GrantedCredit | null>((accounts) =>
    spendGroupedByKey(accounts, (account, count) => this.spendMany(account, count)),
  );
  /** Leases by key; an expired one is kept as a hint of the epoch to join. */
  private readonly leases = new Map<string, Lease>();
  private readonly redis: RedisClient;
  private readonly runs: ServerRuns;
  private pendingWriteBack = new Map<
    string,
    { keyId: string; generation: number; epoch: number; remaining: number }
  >();
  private writeBackTimer?: NodeJS.Timeout;
  private lastWarning = 0;

  constructor(
    private readonly connection: ConnectedRedis,
    private readonly tables: CreditTables,
  ) {
    super();
    const redis = (this.redis = connection.client);
    this.runs = connection.runs;
    redis.defineCommand('gatehouseSpendCredits', { numberOfKeys: 1, lua: SPEND_SCRIPT });
    redis.defineCommand('gatehouseSeedCredits', { numberOfKeys: 1, lua: SEED_SCRIPT });
    redis.defineCommand('gatehousePublishCredits', { numberOfKeys: 1, lua: PUBLISH_SCRIPT });
    redis.defineCommand('gatehouseRefundCredits', { numberOfKeys: 1, lua: REFUND_SCRIPT });
    redis.defineCommand('gatehouseRefundCreditsOnce', { numberOfKeys: 2, lua: REFUND_ONCE_SCRIPT });
    this.scripts = redis as unknown as CreditScripts;
    // A new connection may reach another server, or the same one after it lost or replayed writes.
    this.runs.onChange(() => this.leases.clear());
  }

  /**
   * One hash per holder: e (epoch), u (run id of the Redis server it was seeded on), g (generation of
   * the settings), r (remaining), b (baseline for credits_low). On a cluster, in its organization's hash
   * slot, beside the rate-limit windows its requests ride with.
   */
  private balanceKey({ keyId, organizationId }: BalanceOf): string {
    return `gatehouse:credits:${organizationId ? this.connection.slotTag(organizationId) : ''}${keyId}`;
  }

  spend(account: CreditAccount): Promise<GrantedCredit | null> {
    return this.spends.add(account);
  }

  override readonly riderLua = CREDIT_RIDER_LUA;

  /** Only under leases live here (as spendMany sends a spend to Redis), all sent in the same run. */
  override rideFor(accounts: readonly CreditAccount[], count: number): CreditRide | null {
    const now = performance.now();
    const leases: Lease[] = [];
    const keys: string[] = [];
    const args: (string | number)[] = [count, IDLE_TTL_MS];
    for (const account of accounts) {
      const lease = this.leases.get(account.keyId);
      if (!lease || !sendsUnder(lease, now)) return null;
      leases.push(lease);
      keys.push(this.balanceKey(account));
      args.push(lease.epoch, account.generation, lease.run);
    }
    const ride: LeasedRide = { keys, args, accounts, count, leases };
    return ride;
  }

  /** As spendInRedis reads SPEND_SCRIPT's answer: written back, and not used if a lease ran out meanwhile. */
  override settleRide(ride: CreditRide): RideOutcome | null {
    const { answer, failed, accounts, count, leases } = ride as LeasedRide;
    if (failed) {
      // As spendInRedis after a failed call: whether Redis spent is unknown, so no further spend goes
      // there under these leases; the usual way claims the row first.
      for (const { keyId } of accounts) this.leases.delete(keyId);
      return null;
    }
    if (!answer || answer[0] < 0) return null;
    if (answer[0] > 0) return { short: answer[0] - 1 };
    const now = performance.now();
    let late = false;
    const granted = accounts.map(({ keyId, organizationId }, i): GrantedCredit => {
      const lease = leases[i];
      const left = {
        remaining: answer[1 + 3 * i],
        generation: answer[2 + 3 * i],
        baseline: answer[3 + 3 * i],
      };
      this.writeBack(keyId, lease.epoch, left);
      if (!this.stillHeld(keyId, lease, now)) late = true;
      const takenFrom = { store: 'redis' as const, epoch: lease.epoch };
      return { ...left, account: { keyId, organizationId, generation: left.generation, takenFrom } };
    });
    if (!late) return { granted };
    // Granted after a lease ran out here: the row may be spent by now, so none of these is used.
    granted.forEach(
      ({ account }, i) =>
        void this.giveBack(account, leases[i].epoch, leases[i].run, account.generation, count),
    );
    return null;
  }

  async reserve(account: CreditAccount, count: number): Promise<GrantedCredit | null> {
    const granted = await this.spendMany(account, count, true);
    return granted.length === count ? granted[granted.length - 1] : null;
  }

  async giveBackReserved(account: CreditAccount, count: number, settlementId: string): Promise<void> {
    const { generation, takenFrom } = account;
    if (takenFrom?.store !== 'redis') return; // settled in the database with the task's outcome
    // Unlike a request's refund, a failure is thrown: the settlement stays pending and is tried again.
    const balance = this.balanceKey(account);
    await this.scripts.gatehouseRefundCreditsOnce(
      balance,
      `${balance}:settled:${settlementId}`,
      takenFrom.epoch,
      await this.currentRun(account),
      generation,
      count,
      IDLE_TTL_MS,
    );
  }

  async releaseReserved(account: CreditAccount, count: number): Promise<void> {
    const { keyId, generation, takenFrom } = account;
    if (takenFrom?.store === 'row')
      await this.tables.of(keyId).refundClaimed(keyId, generation, takenFrom.epoch, count);
    else if (takenFrom)
      await this.giveBack(account, takenFrom.epoch, this.currentRun(account), generation, count);
  }

  /**
   * `count` credits of one key: a balance for each one granted, in order. `exact`: all of them or none
   * (a reservation).
   */
  private async spendMany(account: CreditAccount, count: number, exact = false): Promise<GrantedCredit[]> {
    const { keyId } = account;
    const giveUpAt = performance.now() + MAX_WAIT_MS;
    let waitingSince: number | undefined;
    for (;;) {
      const lease = this.leases.get(keyId);
      const now = performance.now();
      let view: RedisView;
      let hinted = false;
      if (lease && sendsUnder(lease, now)) {
        const answer = await this.spendInRedis(account, count, lease, exact);
        if (Array.isArray(answer)) return answer;
        view = answer;
      } else if (lease && now < lease.until + HINT_MS) {
        // Expired lately: ask the row to renew this epoch first (no spending in Redis without a lease).
        view = { failed: false, epoch: lease.epoch, generation: account.generation };
        hinted = true;
      } else {
        view = await this.look(account);
      }

      const sentAt = performance.now();
      // Redis answers but never shows the live epoch (this instance reaches another server than the
      // lease holder's, say): counted as unreachable, so the lease is not renewed and runs out.
      const stuck = waitingSince !== undefined && sentAt - waitingSince > LEASE_MS;
      const claim = await this.tables.of(keyId).claim(keyId, {
        count,
        redisFailed: view.failed || stuck,
        redisEpoch: view.failed ? -1 : view.epoch,
        leaseMs: LEASE_MS,
        holdMs: HOLD_MS,
        exact,
      });
      if (!claim) return []; // Unlimited or gone since the key record was loaded.
      switch (claim.outcome) {
        case 'row':
          this.leases.delete(keyId);
          return grantedBalances(account, claim.granted, claim.state, { store: 'row', epoch: claim.epoch });
        case 'wait':
          // A stale hint: another instance seeded a newer epoch, which Redis names at once. A lease
          // still running is kept: spends of this key in flight under it stay valid.
          if (hinted) {
            this.leases.delete(keyId);
            continue;
          }
          waitingSince ??= sentAt;
          if (performance.now() > giveUpAt)
            throw new Error(`credits of ${keyId}: the Redis lease did not run out within ${MAX_WAIT_MS} ms`);
          await sleep(Math.min(WAIT_STEP_MS, Math.max(1, claim.leaseLeftMs)));
          continue;
        case 'seed':
        case 'join': {
          const fresh = claim.outcome === 'seed';
          if (!fresh && !view.failed && view.generation >= claim.state.generation) {
            this.grantLease(keyId, claim.epoch, await this.currentRun(account).catch(() => ''), sentAt);
            continue;
          }
          try {
            const run = await this.currentRun(account);
            await this.seed(account, claim.epoch, claim.state, run, fresh);
            this.grantLease(keyId, claim.epoch, run, sentAt);
          } catch (error) {
            // Held by nobody else meanwhile: the next claim reports Redis failed and the lease runs out.
            this.warn(error as Error);
            this.leases.delete(keyId);
          }
          continue;
        }
      }
    }
  }

  /** Spends under `lease`: the credits granted, or what Redis holds instead (or that it failed). */
  private async spendInRedis(
    account: CreditAccount,
    count: number,
    lease: Lease,
    exact: boolean,
  ): Promise<GrantedCredit[] | RedisView> {
    const { keyId } = account;
    let answer: number[];
    try {
      answer = await this.scripts.gatehouseSpendCredits(
        this.balanceKey(account),
        lease.epoch,
        account.generation,
        count,
        IDLE_TTL_MS,
        lease.run,
        exact ? 1 : 0,
      );
    } catch (error) {
      this.warn(error as Error);
      this.leases.delete(keyId);
      return { failed: true };
    }
    if (answer[0] === -1) return { failed: false, epoch: -1, generation: 0 };
    if (answer[0] === -2) return { failed: false, epoch: answer[1], generation: answer[2] };
    const [granted, remaining, generation, baseline] = answer;
    const left = { remaining, generation, baseline };
    if (granted > 0) this.writeBack(keyId, lease.epoch, left);
    if (!this.stillHeld(keyId, lease, performance.now())) {
      // Granted after the lease ran out here: the row may be spent by now, so these are not used.
      if (granted > 0) void this.giveBack(account, lease.epoch, lease.run, generation, granted);
      return { failed: false, epoch: lease.epoch, generation };
    }
    return grantedBalances(account, granted, left, { store: 'redis', epoch: lease.epoch });
  }

  /** Which balance Redis holds for the key, without spending. */
  private async look(account: CreditAccount): Promise<RedisView> {
    try {
      const answer = await this.scripts.gatehouseSpendCredits(
        this.balanceKey(account),
        -1,
        account.generation,
        0,
        IDLE_TTL_MS,
        await this.currentRun(account),
        0,
      );
      return answer[0] === -2
        ? { failed: false, epoch: answer[1], generation: answer[2] }
        : { failed: false, epoch: -1, generation: 0 };
    } catch (error) {
      this.warn(error as Error);
      return { failed: true };
    }
  }

  /** An answer that came under `lease` may be used: it is still this key's lease and has not run out. */
  private stillHeld(keyId: string, lease: Lease, now: number): boolean {
    return this.leases.get(keyId) === lease && now < lease.until;
  }

  private grantLease(keyId: string, epoch: number, run: string, sentAt: number): void {
    if (!run) return;
    const until = sentAt + LEASE_MS - LEASE_MARGIN_MS;
    const held = this.leases.get(keyId);
    // Extended in place: spends in flight under it stay valid.
    if (held?.epoch === epoch && held.run === run) held.until = Math.max(held.until, until);
    else {
      if (this.leases.size >= MAX_LEASES) this.leases.clear();
      this.leases.set(keyId, { epoch, run, until });
    }
  }

  /**
   * Gives `count` credits back to Redis's balance of `epoch` on the server run `run`. When that fails,
   * whether it arrived is unknown: giving them back in the row too could count them twice, so they stay
   * spent.
   */
  private async giveBack(
    holder: BalanceOf,
    epoch: number,
    run: string | Promise<string>,
    generation: number,
    count: number,
  ): Promise<void> {
    try {
      await this.scripts.gatehouseRefundCredits(this.balanceKey(holder), epoch, await run, generation, count);
    } catch (error) {
      this.warn(error as Error);
    }
  }

  async refund(account: CreditAccount): Promise<void> {
    const { keyId, generation, takenFrom } = account;
    if (takenFrom?.store === 'row')
      await this.tables.of(keyId).refundClaimed(keyId, generation, takenFrom.epoch);
    else if (takenFrom)
      await this.giveBack(account, takenFrom.epoch, this.currentRun(account), generation, 1);
  }

  async publish(holder: BalanceOf, state: CreditState): Promise<void> {
    try {
      await this.scripts.gatehousePublishCredits(
        this.balanceKey(holder),
        state.generation,
        state.remaining,
        state.baseline,
      );
    } catch (error) {
      // Instances spending in Redis see the new generation in their reloaded key records, and Redis
      // takes it from the row when it next reports the older one.
      this.warn(error as Error);
    }
  }

  async balances(keys: readonly CreditRowBalance[]): Promise<Map<string, number>> {
    const balances = new Map(keys.map(({ keyId, state }) => [keyId, state.remaining]));
    if (!keys.length) return balances;
    try {
      // One read per balance, sent in one turn: auto-pipelined, one round trip per server (a cluster's
      // balances are in their organizations' slots, which one pipeline may not span).
      const held = await Promise.all(
        keys.map(async (key) => {
          const [run, value] = await Promise.all([
            this.currentRun(key),
            this.redis.hmget(this.balanceKey(key), 'e', 'u', 'g', 'r'),
          ]);
          return { run, value };
        }),
      );
      keys.forEach(({ keyId, state, epoch }, i) => {
        const { run, value } = held[i];
        const [heldEpoch, heldRun, generation, remaining] = value;
        // Redis's copy is the live one only while the row names its epoch (see the class comment).
        if (
          heldRun === run &&
          Number(heldEpoch) === epoch &&
          generation !== null &&
          remaining !== null &&
          Number(generation) >= state.generation
        ) {
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

  /** The id of the Redis server that holds the holder's balance; a restarted server has a new one. */
  private currentRun(holder: BalanceOf): Promise<string> {
    return this.runs.of(this.balanceKey(holder));
  }

  private seed(
    holder: BalanceOf,
    epoch: number,
    state: CreditState,
    run: string,
    fresh: boolean,
  ): Promise<number> {
    return this.scripts.gatehouseSeedCredits(
      this.balanceKey(holder),
      epoch,
      state.generation,
      state.remaining,
      state.baseline,
      IDLE_TTL_MS,
      run,
      fresh ? 1 : 0,
    );
  }

  private writeBack(keyId: string, epoch: number, state: CreditState): void {
    const pending = this.pendingWriteBack.get(keyId);
    // The latest balance wins: a later epoch, else a later generation, else the lowest remaining.
    const later =
      !pending ||
      epoch > pending.epoch ||
      (epoch === pending.epoch &&
        (state.generation > pending.generation ||
          (state.generation === pending.generation && state.remaining < pending.remaining)));
    if (later) {
      this.pendingWriteBack.set(keyId, {
        keyId,
        generation: state.generation,
        epoch,
        remaining: state.remaining,
      });
    }
    if (!this.writeBackTimer) {
      this.writeBackTimer = setTimeout(() => void this.flushWriteBack(), WRITE_BACK_DELAY_MS);
      this.writeBackTimer.unref();
    }
  }

  /** Writes spends back to the row and, with them, renews the leases of the keys still spent here. */
  private async flushWriteBack(): Promise<void> {
    clearTimeout(this.writeBackTimer);
    this.writeBackTimer = undefined;
    if (!this.pendingWriteBack.size) return;
    const batch = this.pendingWriteBack;
    this.pendingWriteBack = new Map();
    const sentAt = performance.now();
    try {
      const renewed = await this.tables.writeBack([...batch.values()], LEASE_MS);
      const tookMs = performance.now() - sentAt;
      if (tookMs > LEASE_MARGIN_MS - WRITE_BACK_DELAY_MS)
        this.logger.warn(
          `credit write-back took ${Math.round(tookMs)} ms: a hand-over meanwhile may have missed it`,
        );
      for (const { keyId, epoch } of batch.values()) {
        const lease = this.leases.get(keyId);
        if (renewed.has(keyId) && lease?.epoch === epoch)
          lease.until = Math.max(lease.until, sentAt + LEASE_MS - LEASE_MARGIN_MS);
      }
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

/** A spend may be sent to Redis under `lease` now: its answer can still come before the lease runs out. */
function sendsUnder(lease: Lease, now: number): boolean {
  return now < lease.until - SEND_SLACK_MS;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
