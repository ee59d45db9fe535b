import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../../../src/access/principal';
import { Created, NoContent, Operation } from '../../../src/access/route-access.decorators';
import type { RequestOrigin } from '../../../src/audit/audit.service';
import { Origin } from '../../../src/audit/request-origin.decorator';
import { ListQueryDto } from '../../../src/common/pagination';
import { CreateProjectDto, ProjectPage, ProjectResponse, UpdateProjectDto } from './project.dto';
import { ProjectsService } from './projects.service';

/**
 * /v1/projects. Every route declares its permission (the app refuses to start if one names a permission
 * no module declared; a route that declares nothing is refused for everyone), takes the caller's
 * Principal and stays within its organization. Changes take the caller's origin for their audit entries.
 */
@ApiTags('projects')
@Controller('v1/projects')
export class ProjectsController {
  constructor(private readonly projects: ProjectsService) {}

  @Get()
  @Operation('projects:read', "The organization's projects, newest first", ProjectPage, 400)
  async list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<ProjectPage> {
    const page = await this.projects.list(principal, query);
    return { data: page.data.map(ProjectResponse.of), next_cursor: page.next_cursor };
  }

  @Post()
  @Operation('projects:create', 'Create a project', Created(ProjectResponse), 400, 409)
  async create(
    @Principal() principal: Principal,
    @Body() dto: CreateProjectDto,
    @Origin() origin: RequestOrigin,
  ): Promise<ProjectResponse> {
    return ProjectResponse.of(await this.projects.create(principal, dto, origin));
  }

  @Get(':id')
  @Operation('projects:read', 'Get a project', ProjectResponse, 404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<ProjectResponse> {
    return ProjectResponse.of(await this.projects.get(principal, id));
  }

  @Patch(':id')
  @Operation('projects:update', "Change a project's name or description", ProjectResponse, 400, 404, 409)
  async update(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateProjectDto,
    @Origin() origin: RequestOrigin,
  ): Promise<ProjectResponse> {
    return ProjectResponse.of(await this.projects.update(principal, id, dto, origin));
  }

  @Delete(':id')
  @HttpCode(204)
  @Operation('projects:delete', 'Delete a project', NoContent, 404)
  async delete(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Origin() origin: RequestOrigin,
  ): Promise<void> {
    await this.projects.delete(principal, id, origin);
  }
}
