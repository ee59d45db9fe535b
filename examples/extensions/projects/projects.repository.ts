import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../../../src/common/pagination';
import { Project } from './project.entity';

/** The projects table: every query on it, each scoped to one organization. */
@Injectable()
export class ProjectsRepository {
  constructor(@InjectRepository(Project) private readonly projects: Repository<Project>) {}

  /** Runs `work` in one transaction: a change, its audit entry and its event commit together. */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.projects.manager.transaction(work);
  }

  insert(
    manager: EntityManager,
    fields: Pick<Project, 'id' | 'organizationId' | 'name' | 'description' | 'createdBy'>,
  ): Promise<Project> {
    const projects = manager.getRepository(Project);
    return projects.save(projects.create(fields));
  }

  /**
   * Changes the given fields (and `updated_at`) of the project if it is still there, and answers it as
   * stored, or null when it is gone. An UPDATE rather than `save`, which would insert a project deleted
   * meanwhile back.
   */
  async update(
    manager: EntityManager,
    project: Pick<Project, 'id' | 'organizationId'>,
    changes: Partial<Pick<Project, 'name' | 'description'>>,
  ): Promise<Project | null> {
    const projects = manager.getRepository(Project);
    const where = { id: project.id, organizationId: project.organizationId };
    const { affected } = await projects.update(where, changes);
    return affected ? projects.findOneBy(where) : null;
  }

  /** Whether the project was there to delete. */
  async delete(manager: EntityManager, project: Pick<Project, 'id' | 'organizationId'>): Promise<boolean> {
    const { affected } = await manager
      .getRepository(Project)
      .delete({ id: project.id, organizationId: project.organizationId });
    return Boolean(affected);
  }

  page(organizationId: string, query: ListQueryDto): Promise<Page<Project>> {
    return paginate(
      this.projects
        .createQueryBuilder('project')
        .where('project.organization_id = :organizationId', { organizationId }),
      query,
    );
  }

  findInOrganization(organizationId: string, id: string): Promise<Project | null> {
    return this.projects.findOneBy({ id, organizationId });
  }
}
