import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { OrganizationSecret } from './organization-secret.entity';

/** The organization_secrets table: every query on it scoped to one organization. */
@Injectable()
export class OrganizationSecretsRepository {
  constructor(
    @InjectRepository(OrganizationSecret) private readonly secrets: Repository<OrganizationSecret>,
  ) {}

  /** Runs `work` in one transaction: a change and its audit entry commit together. */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.secrets.manager.transaction(work);
  }

  newSecret(fields: Partial<OrganizationSecret>): OrganizationSecret {
    return this.secrets.create(fields);
  }

  save(manager: EntityManager, secret: OrganizationSecret): Promise<OrganizationSecret> {
    return manager.save(secret);
  }

  findInOrganization(organizationId: string, id: string): Promise<OrganizationSecret | null> {
    return this.secrets.findOneBy({ id, organizationId });
  }

  lockInOrganization(
    manager: EntityManager,
    organizationId: string,
    id: string,
  ): Promise<OrganizationSecret | null> {
    return manager.findOne(OrganizationSecret, {
      where: { id, organizationId },
      lock: { mode: 'pessimistic_write' },
    });
  }

  page(organizationId: string, query: ListQueryDto): Promise<Page<OrganizationSecret>> {
    const builder = this.secrets
      .createQueryBuilder('secret')
      .where('secret.organization_id = :organizationId', { organizationId });
    return paginate(builder, query);
  }

  async delete(manager: EntityManager, organizationId: string, id: string): Promise<void> {
    await manager.delete(OrganizationSecret, { id, organizationId });
  }

  /**
   * Stamps last_used_at unless it was stamped after `staleBefore` (one write a minute at most, whatever
   * the number of runs). A plain UPDATE: updated_at is the value's, not its use's, so it stays.
   */
  async markUsed(organizationId: string, id: string, at: Date, staleBefore: Date): Promise<void> {
    await this.secrets
      .createQueryBuilder()
      .update(OrganizationSecret)
      // Named so TypeORM does not stamp updated_at itself.
      .set({ lastUsedAt: at, updatedAt: () => 'updated_at' })
      .where('id = :id AND organization_id = :organizationId', { id, organizationId })
      .andWhere('(last_used_at IS NULL OR last_used_at < :staleBefore)', { staleBefore })
      .execute();
  }
}
