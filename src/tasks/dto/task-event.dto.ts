import { ApiProperty, getSchemaPath } from '@nestjs/swagger';
import type { Type } from '@nestjs/common';
import {
  TASK_EVENT_TYPES,
  TaskEventResponse,
  TaskOutputData,
  TaskOutputFileResponse,
  TaskProgressData,
  TaskStatusData,
  TaskUsageData,
} from './task.dto';

type TaskEventType = (typeof TASK_EVENT_TYPES)[number];

/** What an event's `data` holds, by the event's `type`. */
const DATA_OF_TYPE: Record<TaskEventType, Type<object>> = {
  status: TaskStatusData,
  progress: TaskProgressData,
  output: TaskOutputData,
  usage: TaskUsageData,
  file: TaskOutputFileResponse,
};

/**
 * The schema of one type of event (`TaskStatusEvent`, `TaskProgressEvent`, …): TaskEventResponse with
 * `type` fixed and `data` that type's schema. A single schema with `data` a `oneOf` of the five was
 * ambiguous (`{}` is progress data, and progress data with a `status` field is status data too); one per
 * type, told apart by `type`, matches each event exactly once.
 */
function taskEventOfType(type: TaskEventType): Type<object> {
  class TaskEventOfType {
    @ApiProperty({
      type: 'integer',
      description: "The event's number in the task (1, 2, 3, …): the event stream's `id:`.",
    })
    seq: number;
    @ApiProperty({ enum: [type] }) type: string;
    // `object`, not Record<string, unknown>: the swagger plugin would read that as additionalProperties: true
    // beside the reference (the data schemas say what they hold).
    @ApiProperty({ type: DATA_OF_TYPE[type] }) data: object;
    @ApiProperty({ format: 'date-time' }) created_at: string;
  }
  const name = `Task${type[0].toUpperCase()}${type.slice(1)}Event`;
  Object.defineProperty(TaskEventOfType, 'name', { value: name });
  return TaskEventOfType;
}

/** One class per event type, for `@ApiExtraModels` (the document lists each). */
export const TASK_EVENT_MODELS = TASK_EVENT_TYPES.map(taskEventOfType);

/** A task event, any type: discriminated by `type`. */
export const TASK_EVENT_SCHEMA = {
  oneOf: TASK_EVENT_MODELS.map((model) => ({ $ref: getSchemaPath(model) })),
  discriminator: {
    propertyName: 'type',
    mapping: Object.fromEntries(
      TASK_EVENT_TYPES.map((type, i) => [type, getSchemaPath(TASK_EVENT_MODELS[i])]),
    ),
  },
};

export class TaskEventPage {
  @ApiProperty({ type: 'array', items: TASK_EVENT_SCHEMA }) data: TaskEventResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}
