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
