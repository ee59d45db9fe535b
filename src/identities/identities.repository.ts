import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import type { RefillInterval } from '../common/usage-controls.dto';
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

  /** Sets (or with null removes) the balance and its refill, as a new generation (as a key's). */
  async setCredits(
    manager: EntityManager,
    id: string,
    credits: { remaining: number; refill?: { interval: RefillInterval; amount: number } | null } | null,
    at: Date,
  ): Promise<Identity> {
    await manager.query(
      `UPDATE identities
          SET credits_remaining = $2::bigint, credits_baseline = $2::bigint, credits_refill_interval = $3,
              credits_refill_amount = $4, credits_set_at = $5,
              credits_refilled_at = CASE WHEN $2::bigint IS NULL THEN NULL ELSE credits_refilled_at END,
              credits_generation = credits_generation + 1
        WHERE id = $1`,
      [
        id,
        credits?.remaining ?? null,
        credits?.refill?.interval ?? null,
        credits?.refill?.amount ?? null,
        credits ? at : null,
      ],
    );
    return manager.findOneByOrFail(Identity, { id });
  }
}
