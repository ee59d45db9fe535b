import type { CreditState } from './credit-balance-table';
import type { WindowRide } from '../../rate-limits/window-counter';

/**
 * Which balance a request spends from, and the generation of its settings it was loaded with. The
 * holder is a key or an identity (credit-tables.ts tells them apart by the id's prefix); the field keeps
 * its first name because reservations stored with tasks carry it.
 */
export interface CreditAccount extends BalanceOf {
  generation: number;
  /**
   * Where a granted credit was taken, for its refund: Redis or the row, in which epoch (the Redis
   * ledger's hand-overs); absent for the database ledger, where the row is always the balance.
   */
  takenFrom?: { store: 'redis' | 'row'; epoch: number };
}

/**
 * Whose balance: the holder's id, a key's (`key_…`) or an identity's (`idt_…`), and its organization,
 * whose hash slot the balance shares on a Redis Cluster with the windows it is spent beside
 * (RedisConnection.slotTag). Reservations stored with tasks before clusters were supported have no
 * organization; the ledger then names the balance as on one Redis.
 */
export interface BalanceOf {
  keyId: string;
  organizationId?: string;
}

/** One credit spent: the balance after it, and the account a refund gives it back to. */
export interface GrantedCredit extends CreditState {
  account: CreditAccount;
}

/**
 * Where live credit balances are kept and spent, exactly across instances: the database without
 * Redis (postgres-credit-ledger.ts), Redis backed by the database with it (redis-credit-ledger.ts).
 * Both refuse at zero atomically, so instances together never spend more than the balance.
 */
export abstract class CreditLedger {
  /** Spends one credit: the balance after it, or null when none was left. */
  abstract spend(account: CreditAccount): Promise<GrantedCredit | null>;

  /** Gives back one credit of `account` (a request refused by a later step spends nothing). */
  abstract refund(account: CreditAccount): Promise<void>;

  /**
   * Spends exactly `count` credits or none (a task's reservation): the balance left and the account
   * they came from (where a settlement gives back what the run did not use), or null when fewer were left.
   */
  abstract reserve(account: CreditAccount, count: number): Promise<GrantedCredit | null>;

  /**
   * Gives back `count` credits of a reservation, once per `settlementId` however often it is called (a
   * settlement retried after a crash). Only the Redis ledger needs this: a reservation taken from the row
   * is settled in the database, in the transaction that records the task's outcome.
   */
  abstract giveBackReserved(account: CreditAccount, count: number, settlementId: string): Promise<void>;

  /** Gives back `count` credits of a reservation whose task was never made (no settlement to repeat). */
  abstract releaseReserved(account: CreditAccount, count: number): Promise<void>;

  /** A balance was just set in the database (create, PATCH, refill): make it the live one everywhere. */
  abstract publish(holder: BalanceOf, state: CreditState): Promise<void>;

  /** The live balances of keys as loaded from the database (the rows' values where nothing newer is held). */
  abstract balances(keys: readonly CreditRowBalance[]): Promise<Map<string, number>>;

  /**
   * The Lua of this ledger's ride (RideCarrier, rate-limits/window-counter.ts), when its balances live
   * in the Redis that counts rate-limit windows; undefined for the database ledger.
   */
  readonly riderLua?: string;

  /**
   * `count` credits of each account, all of them or none, prepared to be spent in the Redis script run
   * that counts the request's windows (one round trip for both; `settleRide` reads what it answered),
   * or null when this ledger cannot: the database ledger, or a balance this instance may not spend in
   * Redis now (RedisCreditLedger: no live lease). Then the request spends the usual way.
   */
  rideFor(_accounts: readonly CreditAccount[], _count: number): CreditRide | null {
    return null;
  }

  /**
   * What a ride spent: a balance per account, or the index of the first account too short (nothing was
   * spent); null when it spent nothing and the request must spend the usual way (it did not ride, or
   * Redis held another copy of a balance than the lease named).
   */
  settleRide(_ride: CreditRide): RideOutcome | null {
    return null;
  }
}

/** Credits of several accounts, all or none, riding with a request's windows (CreditLedger.rideFor). */
export interface CreditRide extends WindowRide {
  readonly accounts: readonly CreditAccount[];
  readonly count: number;
}

export type RideOutcome = { granted: GrantedCredit[] } | { short: number };

/** A key's balance as its row holds it, with the row's epoch (which copy of it is live). */
export interface CreditRowBalance extends BalanceOf {
  state: CreditState;
  epoch: number;
}

/**
 * The spends of one turn of the event loop (see TickBatch), grouped by key: `spendMany` spends up to
 * `count` credits of one key in one operation and answers a balance for each credit granted, in
 * order. Under load a hot key's concurrent requests cost one round trip together, each still getting
 * its own balance; alone, a request waits no longer than a setImmediate.
 */
export async function spendGroupedByKey(
  accounts: CreditAccount[],
  spendMany: (account: CreditAccount, count: number) => Promise<GrantedCredit[]>,
): Promise<(GrantedCredit | null)[]> {
  const results = new Array<GrantedCredit | null>(accounts.length).fill(null);
  const byKey = new Map<string, number[]>();
  accounts.forEach((account, i) => {
    const indexes = byKey.get(account.keyId);
    if (indexes) indexes.push(i);
    else byKey.set(account.keyId, [i]);
  });
  await Promise.all(
    [...byKey.values()].map(async (indexes) => {
      const { keyId, organizationId } = accounts[indexes[0]];
      const generation = Math.max(...indexes.map((i) => accounts[i].generation));
      const states = await spendMany({ keyId, organizationId, generation }, indexes.length);
      indexes.forEach((index, n) => (results[index] = states[n] ?? null));
    }),
  );
  return results;
}

/** A reservation of `count` credits of one balance, all or none (CreditLedger.reserve). */
export interface Reservation {
  account: CreditAccount;
  count: number;
}

/** A reservation's answer in a batch: each settles alone, so one balance's failure fails only its own. */
export type ReservationResult = { granted: GrantedCredit | null } | { error: unknown };

/**
 * A group's total stays under this many credits, as a single reservation's may be: the Redis ledger
 * answers a balance per credit (grantedBalances).
 */
const MAX_GROUPED_CREDITS = 1000;

/**
 * The reservations of one turn of the event loop (see TickBatch), grouped by balance: a hot key's
 * concurrent reservations (a service verifying its callers' keys with a cost) are one exact reserve of
 * their total, one round trip or one UPDATE, each answered its own balance as if it had gone alone in
 * that order (the first saw the highest). When the balance cannot cover the group, each is tried alone,
 * in order, so "all or none" still holds for every reservation and none is refused that would have fit.
 */
export async function reserveGroupedByKey(
  reservations: Reservation[],
  reserve: (account: CreditAccount, count: number) => Promise<GrantedCredit | null>,
): Promise<ReservationResult[]> {
  const results = new Array<ReservationResult>(reservations.length);
  const groups: number[][] = [];
  const open = new Map<string, { indexes: number[]; total: number }>();
  reservations.forEach(({ account, count }, i) => {
    const group = open.get(account.keyId);
    if (group && group.total + count <= MAX_GROUPED_CREDITS) {
      group.indexes.push(i);
      group.total += count;
      return;
    }
    const started = { indexes: [i], total: count };
    open.set(account.keyId, started);
    groups.push(started.indexes);
  });
  const alone = async (i: number): Promise<void> => {
    const { account, count } = reservations[i];
    try {
      results[i] = { granted: await reserve(account, count) };
    } catch (error) {
      results[i] = { error };
    }
  };
  await Promise.all(
    groups.map(async (indexes) => {
      if (indexes.length === 1) return alone(indexes[0]);
      const members = indexes.map((i) => reservations[i]);
      const generation = Math.max(...members.map(({ account }) => account.generation));
      const total = members.reduce((sum, { count }) => sum + count, 0);
      let granted: GrantedCredit | null;
      try {
        const { keyId, organizationId } = members[0].account;
        granted = await reserve({ keyId, organizationId, generation }, total);
      } catch (error) {
        for (const i of indexes) results[i] = { error };
        return;
      }
      if (!granted) {
        for (const i of indexes) await alone(i);
        return;
      }
      // Each reservation's balance is what was left after it: the later ones' credits still there.
      let after = total;
      for (const i of indexes) {
        after -= reservations[i].count;
        results[i] = { granted: { ...granted, remaining: granted.remaining + after } };
      }
    }),
  );
  return results;
}

/**
 * Balances for `granted` credits spent at once, leaving `remaining`: the first saw the highest. A
 * refund goes back to `takenFrom`, in the generation the balance had.
 */
export function grantedBalances(
  { keyId, organizationId }: BalanceOf,
  granted: number,
  left: CreditState,
  takenFrom?: CreditAccount['takenFrom'],
): GrantedCredit[] {
  const account: CreditAccount = { keyId, organizationId, generation: left.generation, takenFrom };
  return Array.from({ length: granted }, (_, n) => ({
    ...left,
    remaining: left.remaining + granted - 1 - n,
    account,
  }));
}
