import { ApiKeysRepository, CreditState } from '../api-keys.repository';
import { CreditAccount, CreditLedger } from './credit-ledger';

/**
 * Without Redis the row is the balance: one conditional UPDATE per spend (`credits_remaining > 0`),
 * which PostgreSQL serialises per row, so instances on one database are exact. It costs a write per
 * request of a key with credits only; keys without credits never reach a ledger.
 */
export class PostgresCreditLedger extends CreditLedger {
  constructor(private readonly keys: ApiKeysRepository) {
    super();
  }

  spend({ keyId }: CreditAccount): Promise<CreditState | null> {
    return this.keys.spendCredit(keyId);
  }

  refund({ keyId, generation }: CreditAccount): Promise<void> {
    return this.keys.refundCredit(keyId, generation);
  }

  async publish(): Promise<void> {
    // The database is the live balance already.
  }

  async balances(keys: readonly { keyId: string; state: CreditState }[]): Promise<Map<string, number>> {
    return new Map(keys.map(({ keyId, state }) => [keyId, state.remaining]));
  }
}
