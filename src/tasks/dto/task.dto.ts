import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  MinLength,
} from 'class-validator';
import { IntegerField, Omittable } from '../../common/validators';
import { MAX_TOKENS, POSTED_TASK_EVENT_TYPES, type PostedTaskEventType } from '../task-event-data';
import type { TaskEventRow } from '../task-queue.repository';
import { ListQueryDto } from '../../common/pagination';
import { Task, TASK_STATUSES, TaskStatus } from '../task.entity';
import { creditsOf } from '../task-costs';

// Declared with the event data they type (which must not import this file back); offered here too, beside
// the DTOs of posted events.
export { POSTED_TASK_EVENT_TYPES, type PostedTaskEventType };

export class CreateTaskDto {
  @ApiProperty({ maxLength: 10000, example: 'Summarise the attached report' })
  @IsString()
  @MinLength(1)
  @MaxLength(10000)
  instruction: string;

  @ApiProperty({ example: 'echo' })
  @IsString()
  @MaxLength(50)
  agent_type: string;

  @ApiPropertyOptional({ type: [String], example: ['file_9aZ…'], maxItems: 20 })
  @Omittable()
  @IsArray()
  @ArrayMaxSize(20)
  @IsString({ each: true })
  @MaxLength(40, { each: true })
  attachments?: string[];

  @ApiPropertyOptional({
    example: 'agent_5JkQm2Tz8RpVw3Xy7NbLc4',
    description: 'A configured agent of that type (required for http).',
  })
  @Omittable()
  @IsString()
  @Matches(/^agent_[0-9A-Za-z]{22}$/, { message: 'agent_id must be an agent id (agent_…)' })
  agent_id?: string;

  // tasks.max_credits is an integer column (INT4_MAX), and so is credits_charged, which never passes it.
  @IntegerField({
    minimum: 0,
    maximum: 1_000_000_000,
    optional: 'omittable',
    description:
      "Credits reserved for the run at once (default: the agent's default_max_credits, else 0); the run " +
      'never costs more, and what it does not use is given back when it ends.',
  })
  max_credits?: number;
}

export class ListTasksQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: TASK_STATUSES })
  @IsOptional()
  @IsIn(TASK_STATUSES)
  status?: TaskStatus;
}

export class GetTaskQueryDto {
  @IntegerField({
    minimum: 1,
    maximum: 60,
    optional: 'omittable',
    fromQuery: true,
    description:
      'Seconds to wait for the task to end: the answer comes as soon as it is no longer queued or running, or after that long with its state then.',
  })
  wait?: number;
}

export class TaskProgressData {
  @ApiPropertyOptional({ maxLength: 1000 }) message?: string;
  @ApiPropertyOptional({ minimum: 0, maximum: 100 }) percent?: number;
}

export class TaskOutputFileResponse {
  @ApiProperty({ example: 'file_9aZ…' }) id: string;
  @ApiProperty() filename: string;
  @ApiProperty({ type: 'integer' }) size: number;
  @ApiProperty() sha256: string;
}

export class TaskUsageResponse {
  @ApiProperty({ type: 'integer', description: 'Input tokens the agent reported (usage events add up).' })
  input_tokens: number;
  @ApiProperty({ type: 'integer', description: 'Output tokens the agent reported.' }) output_tokens: number;
  @ApiProperty({
    type: 'integer',
    description:
      "Credits the run costs at its agent's pricing (at most max_credits; max_credits when it ended as budget_exceeded).",
  })
  credits: number;
}

export class TaskStatusData {
  @ApiProperty({ enum: TASK_STATUSES }) status: TaskStatus;
}

export class TaskErrorResponse {
  @ApiProperty() code: string;
  @ApiProperty() message: string;
}

export class TaskResponse {
  @ApiProperty({ example: 'task_1Qw…' }) id: string;
  @ApiProperty({ enum: TASK_STATUSES }) status: TaskStatus;
  @ApiProperty() instruction: string;
  @ApiProperty() agent_type: string;
  @ApiProperty({ type: String, nullable: true }) agent_id: string | null;
  @ApiProperty({ type: [String] }) attachments: string[];
  @ApiProperty({ type: 'integer', description: 'Attempts made so far.' }) attempts: number;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) started_at: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) completed_at: string | null;
  /**
   * Present when succeeded: the agent's answer, any JSON value (an http agent's JSON body as it sent
   * it). The built-in echo agent answers `{output, attachments: [{id, filename, size, sha256}]}`.
   */
  @ApiPropertyOptional({
    description: "Present when succeeded: the agent's answer, any JSON value.",
    anyOf: [
      { type: 'object', additionalProperties: true },
      { type: 'array', items: {} },
      { type: 'string' },
      { type: 'number' },
      { type: 'boolean' },
      { type: 'null' },
    ],
  })
  result?: unknown;
  @ApiPropertyOptional({ type: TaskErrorResponse, description: 'Present when failed.' })
  error?: TaskErrorResponse;
  @ApiProperty({
    type: TaskProgressData,
    nullable: true,
    description: "The last progress event's data; null until one.",
  })
  progress: TaskProgressData | null;
  @ApiProperty({ type: [TaskOutputFileResponse], description: "Files the task's run uploaded." })
  output_files: TaskOutputFileResponse[];
  @ApiProperty({ type: () => TaskUsageResponse })
  usage: TaskUsageResponse;
  @ApiProperty({
    type: 'integer',
    description: 'Credits reserved for the run (its cost never exceeds them).',
  })
  max_credits: number;

  static of(task: Task): TaskResponse {
    return {
      id: task.id,
      status: task.status,
      instruction: task.instruction,
      agent_type: task.agentType,
      agent_id: task.agentId,
      attachments: task.attachments,
      attempts: task.attempts,
      created_at: task.createdAt.toISOString(),
      started_at: task.startedAt?.toISOString() ?? null,
      completed_at: task.completedAt?.toISOString() ?? null,
      ...(task.status === 'succeeded' ? { result: task.result } : {}),
      ...(task.status === 'failed' && task.error ? { error: task.error } : {}),
      progress: task.progress,
      output_files: task.outputFiles,
      usage: { input_tokens: task.inputTokens, output_tokens: task.outputTokens, credits: creditsOf(task) },
      max_credits: task.maxCredits,
    };
  }
}

export class TaskPage {
  @ApiProperty({ type: [TaskResponse] }) data: TaskResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}

export const TASK_EVENT_TYPES = ['status', 'progress', 'output', 'usage', 'file'] as const;

export class TaskEventResponse {
  @ApiProperty({
    type: 'integer',
    description: "The event's number in the task (1, 2, 3, …): the event stream's `id:`.",
  })
  seq: number;
  @ApiProperty({ enum: TASK_EVENT_TYPES }) type: string;
  // The document describes each type of event with its own schema (TASK_EVENT_MODELS, task-event.dto.ts).
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'By type: `status` `{status}`, `progress` `{message?, percent?}`, `output` `{delta}`, `usage` ' +
      '`{input_tokens, output_tokens}`, `file` `{id, filename, size, sha256}`.',
  })
  data: Record<string, unknown>;
  @ApiProperty({ format: 'date-time' }) created_at: string;

  static of(event: TaskEventRow): TaskEventResponse {
    return { seq: event.seq, type: event.type, data: event.data, created_at: event.createdAt.toISOString() };
  }
}

export class TaskOutputData {
  @ApiProperty({ description: 'The next piece of the output, at most 64 KiB (UTF-8).' }) delta: string;
}

export class TaskUsageData {
  @ApiProperty({ type: 'integer', minimum: 0, maximum: MAX_TOKENS }) input_tokens: number;
  @ApiProperty({ type: 'integer', minimum: 0, maximum: MAX_TOKENS }) output_tokens: number;
}

export class PostTaskEventDto {
  @ApiProperty({ enum: POSTED_TASK_EVENT_TYPES })
  @IsIn(POSTED_TASK_EVENT_TYPES)
  type: PostedTaskEventType;

  @ApiProperty({
    description:
      '`progress`: `{message?, percent?}`; `output`: `{delta}`; `usage`: `{input_tokens, output_tokens}` (usage events add up).',
    // Any of them, told apart by `type`: progress data's fields are all optional, so output and usage
    // data are progress data too, and a `oneOf` (exactly one match) would refuse them.
    anyOf: [
      { $ref: '#/components/schemas/TaskProgressData' },
      { $ref: '#/components/schemas/TaskOutputData' },
      { $ref: '#/components/schemas/TaskUsageData' },
    ],
  })
  @IsObject()
  data: Record<string, unknown>;
}

export class PostedTaskEventResponse {
  @ApiProperty({ type: 'integer', description: "The event's number in the task." }) seq: number;
  @ApiProperty({ enum: POSTED_TASK_EVENT_TYPES }) type: PostedTaskEventType;
}
