import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { CreditBalanceTable, CreditSetting } from '../api-keys/credits/credit-balance-table';
import { Identity } from './identity.entity';

/** The identities table: every query on it, each scoped to one organization. */
@Injectable()
export class IdentitiesRepository {
  constructor(@InjectRepository(Identity) private readonly identities: Repository<Identity>) {}

  /** Runs `work` in one transaction: a change, its audit entry and its event commit together. */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.identities.manager.transaction(work);
  }

  newIdentity(fields: Partial<Identity>): Identity {
    return this.identities.create(fields);
  }

  save(manager: EntityManager, identity: Identity): Promise<Identity> {
    return manager.save(identity);
  }

  findInOrganization(organizationId: string, id: string): Promise<Identity | null> {
    return this.identities.findOneBy({ id, organizationId });
  }

  /** The identity, locked against concurrent change and against keys attaching to it (their foreign key). */
  lockInOrganization(manager: EntityManager, organizationId: string, id: string): Promise<Identity | null> {
    return manager.findOne(Identity, { where: { id, organizationId }, lock: { mode: 'pessimistic_write' } });
  }

  /** The organization's identities among `ids`. */
  findManyInOrganization(organizationId: string, ids: string[]): Promise<Identity[]> {
    if (!ids.length) return Promise.resolve([]);
    return this.identities.findBy({ organizationId, id: In(ids) });
  }

  page(
    organizationId: string,
    filters: { externalId?: string },
    query: ListQueryDto,
  ): Promise<Page<Identity>> {
    const builder = this.identities
      .createQueryBuilder('identity')
      .where('identity.organization_id = :organizationId', { organizationId });
    if (filters.externalId !== undefined)
      builder.andWhere('identity.external_id = :externalId', { externalId: filters.externalId });
    return paginate(builder, query);
  }

  async delete(manager: EntityManager, organizationId: string, id: string): Promise<void> {
    await manager.delete(Identity, { id, organizationId });
  }

  /** The credit balances of identities, spent by the same ledgers as keys' (src/api-keys/credits). */
  readonly credits = new CreditBalanceTable(() => this.identities.manager, 'identities');

  /** Sets (or with null removes) the balance and its refill, as a new generation (as a key's). */
  async setCredits(manager: EntityManager, id: string, credits: CreditSetting, at: Date): Promise<Identity> {
    await this.credits.set(manager, id, credits, at);
    return manager.findOneByOrFail(Identity, { id });
  }

  /** Identities with a refill whose balance stands from before `before` (the refill scan's candidates). */
  withRefillBefore(before: Date, limit: number): Promise<Identity[]> {
    return this.identities
      .createQueryBuilder('identity')
      .where('identity.credits_refill_interval IS NOT NULL AND identity.credits_remaining IS NOT NULL')
      .andWhere(
        'GREATEST(identity.credits_refilled_at, identity.credits_set_at, identity.created_at) < :before',
        { before },
      )
      .limit(limit)
      .getMany();
  }
}
