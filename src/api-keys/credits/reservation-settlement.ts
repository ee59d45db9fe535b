import { Injectable, Module } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { CreditAccount } from './credit-ledger';
import { refundSettledInTables } from './credit-tables';

/** What a settled run gives back to the balance it reserved from. */
export interface ReservationRefund {
  account: CreditAccount;
  count: number;
}

/**
 * The half of a task's settlement that happens in the database, in the transaction that records the
 * task's outcome (so it happens exactly once, with it): what the run did not use goes back to a
 * balance the database holds (a key's or an identity's row), that of the database ledger (no `takenFrom`) or a row claim of the Redis
 * ledger while the row still is that balance (as a request's refund, refundClaimedCredit). What Redis
 * holds is given back after the commit, once per settlement (CreditsService.giveBackReserved).
 */
@Injectable()
export class ReservationSettlement {
  /** True for a reservation Redis holds: the caller gives it back after the commit. */
  static heldInRedis(account: CreditAccount): boolean {
    return account.takenFrom?.store === 'redis';
  }

  async giveBackInDatabase(manager: EntityManager, refunds: readonly ReservationRefund[]): Promise<void> {
    const owed = refunds.filter(
      (refund) => refund.count > 0 && !ReservationSettlement.heldInRedis(refund.account),
    );
    if (!owed.length) return;
    await refundSettledInTables(
      manager,
      owed.map(({ account, count }) => ({
        id: account.keyId,
        generation: account.generation,
        epoch: account.takenFrom?.epoch ?? null,
        count,
      })),
    );
  }
}

/** ReservationSettlement alone, for the task worker (which runs no API-key routes). */
@Module({ providers: [ReservationSettlement], exports: [ReservationSettlement] })
export class ReservationSettlementModule {}
