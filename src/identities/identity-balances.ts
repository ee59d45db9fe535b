import { Injectable } from '@nestjs/common';
import type { CreditState } from '../api-keys/credits/credit-balance-table';
import type { Identity } from './identity.entity';

/** What the credits module (src/api-keys/credits, above this one) does for identities' balances. */
export interface IdentityBalanceLedger {
  /** The live balance of each identity with credits (with Redis, newer than its row by up to 100 ms). */
  live(identities: readonly Identity[]): Promise<Map<string, number>>;
  /** A balance just set by create or PATCH (committed) is the live one from now on, everywhere. */
  published(identity: Pick<Identity, 'id' | 'organizationId'>, state: CreditState): Promise<void>;
}

/**
 * Identities' balances are spent by the credit ledgers, which belong to the module above this one: it
 * registers them here at start (as IdentityKeys does for key counts), so identities import nothing of it.
 */
@Injectable()
export class IdentityBalances {
  private ledger?: IdentityBalanceLedger;

  register(ledger: IdentityBalanceLedger): void {
    this.ledger = ledger;
  }

  async live(identities: readonly Identity[]): Promise<Map<string, number>> {
    if (this.ledger) return this.ledger.live(identities);
    return new Map(
      identities
        .filter((identity) => identity.creditsRemaining !== null)
        .map((identity) => [identity.id, identity.creditsRemaining!]),
    );
  }

  async published(identity: Identity): Promise<void> {
    if (identity.creditsRemaining === null || !this.ledger) return;
    await this.ledger.published(identity, {
      remaining: identity.creditsRemaining,
      baseline: identity.creditsBaseline ?? identity.creditsRemaining,
      generation: identity.creditsGeneration,
    });
  }
}
