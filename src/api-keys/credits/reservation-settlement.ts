import { Injectable, Module } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { CreditAccount } from './credit-ledger';

/** What a settled run gives back to the balance it reserved from. */
export interface ReservationRefund {
  account: CreditAccount;
  count: number;
}

/**
 * The half of a task's settlement that happens in the database, in the transaction that records the
 * task's outcome (so it happens exactly once, with it): what the run did not use goes back to a
 * balance the database holds, that of the database ledger (no `takenFrom`) or a row claim of the Redis
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
    // One statement; refunds to one key add up first (an UPDATE applies one joined row per target row).
    await manager.query(
      `WITH owed AS (
         SELECT key_id, generation, epoch, sum(count) AS count
           FROM unnest($1::text[], $2::int[], $3::int[], $4::bigint[]) AS o(key_id, generation, epoch, count)
          GROUP BY key_id, generation, epoch
       )
       UPDATE api_keys SET credits_remaining = api_keys.credits_remaining + owed.count
         FROM owed
        WHERE api_keys.id = owed.key_id AND api_keys.credits_generation = owed.generation
          AND (owed.epoch IS NULL
               OR (api_keys.credits_epoch = owed.epoch AND api_keys.credits_lease_until IS NULL))`,
      [
        owed.map((refund) => refund.account.keyId),
        owed.map((refund) => refund.account.generation),
        owed.map((refund) => refund.account.takenFrom?.epoch ?? null),
        owed.map((refund) => refund.count),
      ],
    );
  }
}

/** ReservationSettlement alone, for the task worker (which runs no API-key routes). */
@Module({ providers: [ReservationSettlement], exports: [ReservationSettlement] })
export class ReservationSettlementModule {}
