import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '../../../src/access/principal';
import { actorOf, AuditService, type RequestOrigin } from '../../../src/audit/audit.service';
import { isIdOf, newId } from '../../../src/common/ids';
import { ListQueryDto, Page } from '../../../src/common/pagination';
import { isUniqueViolation } from '../../../src/database/database-errors';
import { EventsService } from '../../../src/events/events.service';
import { CreateProjectDto, ProjectCreatedData, UpdateProjectDto } from './project.dto';
import { Project, PROJECT_NAME_KEY } from './project.entity';
import { PROJECT_ID, type ProjectAuditAction } from './projects.declarations';
import { ProjectError, ProjectErrorCode } from './projects.errors';
import { ProjectsRepository } from './projects.repository';

const notFound = () => new ProjectError(ProjectErrorCode.NotFound, 'The project was not found.');

/**
 * Projects of the caller's organization: every call is scoped by `principal.organizationId`. Each change
 * is audited, and a creation is a `project.created` webhook event, in the change's own transaction (as
 * the core's modules record theirs): they commit together or not at all, so a refused change (a taken
 * name) leaves neither a row, an entry nor an event.
 */
@Injectable()
export class ProjectsService {
  constructor(
    private readonly projects: ProjectsRepository,
    private readonly audit: AuditService,
    private readonly events: EventsService,
  ) {}

  create(principal: Principal, dto: CreateProjectDto, origin: RequestOrigin): Promise<Project> {
    return this.refusingTakenName(dto.name, () =>
      this.projects.transaction(async (manager) => {
        const project = await this.projects.insert(manager, {
          id: newId(PROJECT_ID),
          organizationId: principal.organizationId,
          name: dto.name,
          description: dto.description ?? null,
          createdBy: principal.apiKeyId ?? principal.userId,
        });
        await this.record(manager, project, 'project.created', principal, origin, { name: project.name });
        await this.events.record(manager, [
          {
            organizationId: project.organizationId,
            type: 'project.created',
            data: {
              project_id: project.id,
              name: project.name,
              actor: actorOf(principal),
            } satisfies ProjectCreatedData,
          },
        ]);
        return project;
      }),
    );
  }

  list(principal: Principal, query: ListQueryDto): Promise<Page<Project>> {
    return this.projects.page(principal.organizationId, query);
  }

  async get(principal: Principal, id: string): Promise<Project> {
    // Not an id of this kind: 404 without a query. Another organization's: 404 too, never 403.
    const project = isIdOf(PROJECT_ID, id)
      ? await this.projects.findInOrganization(principal.organizationId, id)
      : null;
    if (!project) throw notFound();
    return project;
  }

  async update(
    principal: Principal,
    id: string,
    dto: UpdateProjectDto,
    origin: RequestOrigin,
  ): Promise<Project> {
    const project = await this.get(principal, id);
    // The fields the request gave (the DTO instance also has the others, undefined).
    const changes = Object.fromEntries(
      Object.entries({ name: dto.name, description: dto.description }).filter(([, v]) => v !== undefined),
    );
    const fields = Object.keys(changes).sort();
    // Nothing to change: nothing to record either.
    if (!fields.length) return project;
    return this.refusingTakenName(dto.name, () =>
      this.projects.transaction(async (manager) => {
        const updated = await this.projects.update(manager, project, changes);
        if (!updated) throw notFound(); // deleted since it was read
        await this.record(manager, updated, 'project.updated', principal, origin, { fields });
        return updated;
      }),
    );
  }

  async delete(principal: Principal, id: string, origin: RequestOrigin): Promise<void> {
    const project = await this.get(principal, id);
    await this.projects.transaction(async (manager) => {
      if (!(await this.projects.delete(manager, project))) throw notFound(); // deleted meanwhile
      await this.record(manager, project, 'project.deleted', principal, origin, { name: project.name });
    });
  }

  /** A unique violation on the organization's names, racing requests included, is 409 project_name_taken. */
  private async refusingTakenName<T>(name: string | undefined, change: () => Promise<T>): Promise<T> {
    try {
      return await change();
    } catch (error) {
      if (isUniqueViolation(error, PROJECT_NAME_KEY)) {
        throw new ProjectError(ProjectErrorCode.NameTaken, `A project named "${name}" already exists.`);
      }
      throw error;
    }
  }

  /** An audit entry naming the project, in the change's transaction. */
  private record(
    manager: EntityManager,
    project: Project,
    action: ProjectAuditAction,
    principal: Principal,
    origin: RequestOrigin,
    details: Record<string, unknown>,
  ): Promise<void> {
    return this.audit.append(manager, [
      {
        organizationId: project.organizationId,
        action,
        actor: actorOf(principal),
        origin,
        details: { project_id: project.id, ...details },
      },
    ]);
  }
}
