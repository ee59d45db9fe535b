import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';
import { OrganizationPolicy } from './organization-policy.entity';

/** The organization_policies table: every query on it. */
@Injectable()
export class OrganizationPoliciesRepository {
  constructor(
    @InjectRepository(OrganizationPolicy) private readonly policies: Repository<OrganizationPolicy>,
  ) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.policies.manager.transaction(work);
  }

  find(organizationId: string): Promise<OrganizationPolicy | null> {
    return this.policies.findOneBy({ organizationId });
  }

  /** The row locked for a change in the caller's transaction (created with the defaults when absent). */
  async lock(manager: EntityManager, organizationId: string): Promise<OrganizationPolicy> {
    await manager.query(
      `INSERT INTO organization_policies (organization_id) VALUES ($1) ON CONFLICT (organization_id) DO NOTHING`,
      [organizationId],
    );
    return manager.findOneOrFail(OrganizationPolicy, {
      where: { organizationId },
      lock: { mode: 'pessimistic_write' },
    });
  }

  save(manager: EntityManager, policy: OrganizationPolicy): Promise<OrganizationPolicy> {
    return manager.save(policy);
  }

  /** The rows of several organizations at once (a leak report names keys of any organization). */
  findMany(organizationIds: string[], manager: EntityManager = this.policies.manager) {
    if (!organizationIds.length) return Promise.resolve([]);
    return manager.findBy(OrganizationPolicy, { organizationId: In(organizationIds) });
  }
}
