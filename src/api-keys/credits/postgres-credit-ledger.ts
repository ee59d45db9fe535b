import { TickBatch } from '../../common/tick-batch';
import {
  CreditAccount,
  CreditLedger,
  CreditRowBalance,
  GrantedCredit,
  grantedBalances,
  spendGroupedByKey,
} from './credit-ledger';
import { CreditTables } from './credit-tables';

/**
 * Without Redis the row (a key's or an identity's) is the balance: a conditional UPDATE (never below zero) on the locked row, so
 * instances on one database are exact. The spends of one turn of the event loop share one UPDATE per
 * key; keys without credits never reach a ledger.
 */
export class PostgresCreditLedger extends CreditLedger {
  private readonly spends = new TickBatch<CreditAccount, GrantedCredit | null>((accounts) =>
    spendGroupedByKey(accounts, async (account, count) => {
      const spent = await this.tables.of(account.keyId).spend(account.keyId, count);
      return spent ? grantedBalances(account, spent.granted, spent.left) : [];
    }),
  );

  constructor(private readonly tables: CreditTables) {
    super();
  }

  spend(account: CreditAccount): Promise<GrantedCredit | null> {
    return this.spends.add(account);
  }

  refund({ keyId, generation }: CreditAccount): Promise<void> {
    return this.tables.of(keyId).refund(keyId, generation);
  }

  async reserve({ keyId, organizationId }: CreditAccount, count: number): Promise<GrantedCredit | null> {
    const left = await this.tables.of(keyId).spendExact(keyId, count);
    return left && { ...left, account: { keyId, organizationId, generation: left.generation } };
  }

  async giveBackReserved(): Promise<void> {
    // Reservations on this ledger are settled in the database with the task's outcome.
  }

  releaseReserved({ keyId, generation }: CreditAccount, count: number): Promise<void> {
    return this.tables.of(keyId).refund(keyId, generation, count);
  }

  async publish(): Promise<void> {
    // The database is the live balance already.
  }

  async balances(keys: readonly CreditRowBalance[]): Promise<Map<string, number>> {
    return new Map(keys.map(({ keyId, state }) => [keyId, state.remaining]));
  }
}
