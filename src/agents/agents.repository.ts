import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { OrganizationRowRef } from '../common/batched-reads';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { Agent } from './agent.entity';

/** The agents table (agent definitions): every query on it. */
@Injectable()
export class AgentsRepository {
  constructor(@InjectRepository(Agent) private readonly agents: Repository<Agent>) {}

  insert(fields: Omit<Agent, 'createdAt' | 'updatedAt'>): Promise<Agent> {
    return this.agents.save(this.agents.create(fields));
  }

  save(agent: Agent): Promise<Agent> {
    return this.agents.save(agent);
  }

  page(organizationId: string, query: ListQueryDto): Promise<Page<Agent>> {
    return paginate(
      this.agents
        .createQueryBuilder('agent')
        .where('agent.organization_id = :organizationId', { organizationId }),
      query,
    );
  }

  /** The organization's agents, oldest first (creation time, then id), at most `limit`. */
  oldestFirst(organizationId: string, limit: number): Promise<Agent[]> {
    return this.agents.find({
      where: { organizationId },
      order: { createdAt: 'ASC', id: 'ASC' },
      take: limit,
    });
  }

  /** The agents among these (organization, id) pairs: one statement, each pair scoped by both. */
  findAmong(refs: OrganizationRowRef[]): Promise<Agent[]> {
    return this.agents.findBy(refs.map(({ organizationId, id }) => ({ organizationId, id })));
  }

  findInOrganization(organizationId: string, id: string): Promise<Agent | null> {
    return this.agents.findOneBy({ id, organizationId });
  }

  async delete(id: string): Promise<void> {
    await this.agents.delete({ id });
  }
}
