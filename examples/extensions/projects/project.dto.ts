import { ApiProperty } from '@nestjs/swagger';
import { DescriptionField, DisplayNameField } from '../../../src/common/validators';
import { EventActor } from '../../../src/events/event-payloads.dto';
import type { Project } from './project.entity';

/** POST /v1/projects. Unknown properties are refused by the app's validation pipe, as everywhere. */
export class CreateProjectDto {
  /** 1-100 characters, not blank, no control characters; unique in the organization (409 otherwise). */
  @DisplayNameField({ example: 'Checkout redesign' })
  name: string;

  @DescriptionField()
  description?: string | null;
}

/** PATCH: only the fields given change; `description: null` clears it, `name: null` is refused. */
export class UpdateProjectDto {
  @DisplayNameField({ optional: true })
  name?: string;

  @DescriptionField()
  description?: string | null;
}

/**
 * The `data` of a `project.created` webhook event (declared on WebhookEventTypes by ProjectsModule, so
 * the OpenAPI document's `webhooks` section describes it). Its properties say their schema themselves:
 * the Swagger plugin reads only the core's files.
 */
export class ProjectCreatedData {
  @ApiProperty({ example: 'prj_5JkQm2Tz8RpVw3Xy7NbLc4' }) project_id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: EventActor }) actor: EventActor;
}

export class ProjectResponse {
  @ApiProperty({ example: 'prj_5JkQm2Tz8RpVw3Xy7NbLc4' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty({ type: String, format: 'date-time' }) created_at: string;
  @ApiProperty({ type: String, format: 'date-time' }) updated_at: string;

  static of(project: Project): ProjectResponse {
    return {
      id: project.id,
      name: project.name,
      description: project.description,
      created_at: project.createdAt.toISOString(),
      updated_at: project.updatedAt.toISOString(),
    };
  }
}

export class ProjectPage {
  @ApiProperty({ type: [ProjectResponse] }) data: ProjectResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}
