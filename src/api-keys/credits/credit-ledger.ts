import type { CreditState } from '../api-keys.repository';

/** Which balance a request spends from: the key, and the generation of its settings it was loaded with. */
export interface CreditAccount {
  keyId: string;
  generation: number;
}

/**
 * Where live credit balances are kept and spent, exactly across instances: the database without
 * Redis (postgres-credit-ledger.ts), Redis backed by the database with it (redis-credit-ledger.ts).
 * Both refuse at zero atomically, so instances together never spend more than the balance.
 */
export abstract class CreditLedger {
  /** Spends one credit: the balance after it, or null when none was left. */
  abstract spend(account: CreditAccount): Promise<CreditState | null>;

  /** Gives back one credit of `account` (a request refused by a later step spends nothing). */
  abstract refund(account: CreditAccount): Promise<void>;

  /** A balance was just set in the database (create, PATCH, refill): make it the live one everywhere. */
  abstract publish(keyId: string, state: CreditState): Promise<void>;

  /** The live balances of keys as loaded from the database (the rows' values where nothing newer is held). */
  abstract balances(keys: readonly { keyId: string; state: CreditState }[]): Promise<Map<string, number>>;
}

/**
 * The spends of one turn of the event loop (see TickBatch), grouped by key: `spendMany` spends up to
 * `count` credits of one key in one operation and answers a balance for each credit granted, in
 * order. Under load a hot key's concurrent requests cost one round trip together, each still getting
 * its own balance; alone, a request waits no longer than a setImmediate.
 */
export async function spendGroupedByKey(
  accounts: CreditAccount[],
  spendMany: (account: CreditAccount, count: number) => Promise<(CreditState | null)[]>,
): Promise<(CreditState | null)[]> {
  const results: (CreditState | null)[] = new Array<CreditState | null>(accounts.length).fill(null);
  const byKey = new Map<string, number[]>();
  accounts.forEach((account, i) => {
    const indexes = byKey.get(account.keyId);
    if (indexes) indexes.push(i);
    else byKey.set(account.keyId, [i]);
  });
  await Promise.all(
    [...byKey].map(async ([keyId, indexes]) => {
      const generation = Math.max(...indexes.map((i) => accounts[i].generation));
      const states = await spendMany({ keyId, generation }, indexes.length);
      indexes.forEach((index, n) => (results[index] = states[n] ?? null));
    }),
  );
  return results;
}

/** Balances for `granted` credits spent at once, leaving `remaining`: the first saw the highest. */
export function grantedBalances(granted: number, left: CreditState): CreditState[] {
  return Array.from({ length: granted }, (_, n) => ({
    ...left,
    remaining: left.remaining + granted - 1 - n,
  }));
}
