import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CreditBalanceTable, CreditTableName, CreditWriteBack } from './credit-balance-table';
import { isIdOf } from '../../common/ids';
import { IDENTITY_ID } from '../../identities/identities.declarations';
import { IdentitiesService } from '../../identities/identities.service';
import { ApiKeysRepository } from '../api-keys.repository';

/**
 * Which table holds a balance, by its holder's id: an identity's (`idt_…`) or a key's. A ledger's
 * account names only the holder, so a reservation stored with a task (tasks.credit_reservation) is
 * settled in the right table whoever reads it.
 */
export function creditTableOf(holderId: string): CreditTableName {
  return isIdOf(IDENTITY_ID, holderId) ? 'identities' : 'api_keys';
}

/**
 * The balances the ledgers spend: keys' (this module's table) and identities' (the identities module's,
 * through its service), one CreditBalanceTable each, chosen by the holder's id.
 */
@Injectable()
export class CreditTables {
  private readonly byName: Readonly<Record<CreditTableName, CreditBalanceTable>>;

  constructor(keys: ApiKeysRepository, identities: IdentitiesService) {
    this.byName = { api_keys: keys.credits, identities: identities.creditBalances };
  }

  of(holderId: string): CreditBalanceTable {
    return this.byName[creditTableOf(holderId)];
  }

  /** Write-backs of several holders, one statement per table: the ids whose lease was renewed. */
  async writeBack(balances: readonly CreditWriteBack[], leaseMs: number): Promise<Set<string>> {
    const renewed = new Set<string>();
    for (const [table, rows] of groupByTable(balances, (balance) => balance.keyId))
      for (const id of await this.byName[table].writeBack(rows, leaseMs)) renewed.add(id);
    return renewed;
  }
}

/** Refunds of settled reservations, in the caller's transaction, one statement per table. */
export async function refundSettledInTables(
  manager: EntityManager,
  refunds: readonly { id: string; generation: number; epoch: number | null; count: number }[],
): Promise<void> {
  for (const [table, rows] of groupByTable(refunds, (refund) => refund.id))
    await new CreditBalanceTable(() => manager, table).refundSettled(manager, rows);
}

function groupByTable<T>(items: readonly T[], holderOf: (item: T) => string): Map<CreditTableName, T[]> {
  const groups = new Map<CreditTableName, T[]>();
  for (const item of items) {
    const table = creditTableOf(holderOf(item));
    const group = groups.get(table);
    if (group) group.push(item);
    else groups.set(table, [item]);
  }
  return groups;
}
