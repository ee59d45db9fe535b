import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { Organization } from './organization.entity';

/** The organizations table: every query on it. */
@Injectable()
export class OrganizationsRepository {
  constructor(@InjectRepository(Organization) private readonly organizations: Repository<Organization>) {}

  /** Runs `work` in one transaction: an organization and its first administrator commit together. */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.organizations.manager.transaction(work);
  }

  /** Serializes first starts: held until the caller's transaction ends. */
  async lockBootstrap(manager: EntityManager): Promise<void> {
    await manager.query(`SELECT pg_advisory_xact_lock(hashtext('gatehouse:bootstrap'))`);
  }

  /** An organization's name; undefined for an unknown id. */
  async nameOf(id: string): Promise<string | undefined> {
    return (await this.organizations.findOne({ where: { id }, select: { name: true } }))?.name;
  }

  insert(manager: EntityManager, fields: Pick<Organization, 'id' | 'name'>): Promise<Organization> {
    return manager.save(manager.create(Organization, fields));
  }
}
