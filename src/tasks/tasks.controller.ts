import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { outboundCredentialHeaders } from '../auth/outbound-credentials';
import { Principal } from '../access/principal';
import { ListQueryDto, mapPage } from '../common/pagination';
import { ApiProblems } from '../common/openapi';
import { Accepted, Operation, RequirePermissions, TaskTokenAccess } from '../access/route-access.decorators';
import {
  CreateTaskDto,
  GetTaskQueryDto,
  ListTasksQueryDto,
  PostedTaskEventResponse,
  PostTaskEventDto,
  TaskEventResponse,
  TaskOutputData,
  TaskOutputFileResponse,
  TaskPage,
  TaskStatusData,
  TaskProgressData,
  TaskResponse,
  TaskUsageData,
} from './dto/task.dto';
import { TASK_EVENT_MODELS, TaskEventPage } from './dto/task-event.dto';
import type { TaskEventRow } from './task-queue.repository';
import { TaskEnds } from './task-ends';
import { eventCursor, TaskEvents } from './task-events';
import { TasksService } from './tasks.service';
import { TaskCredits } from './task-credits';

// A comment line at least this often while a stream has nothing to send (the contract: 15 s), so that
// proxies and clients see the connection alive.
const SSE_HEARTBEAT_MS = 10_000;

// The streams of one task are handed the same rows (TaskEventFeeds): each is written out once.
const written = new WeakMap<TaskEventRow, string>();

/** One event as Server-Sent Events write it: its number, its type, its data as one line of JSON. */
function serverSentEvent(event: TaskEventRow): string {
  let text = written.get(event);
  if (text === undefined) {
    text = `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;
    written.set(event, text);
  }
  return text;
}

@ApiTags('tasks')
@Controller('v1/tasks')
export class TasksController {
  constructor(
    private readonly tasks: TasksService,
    private readonly taskEvents: TaskEvents,
    private readonly ends: TaskEnds,
    private readonly credits: TaskCredits,
  ) {}

  @Post()
  @HttpCode(202)
  @Operation(
    'tasks:create',
    'Queue a task for an agent; it runs asynchronously',
    Accepted(TaskResponse),
    400,
    409,
    422,
  )
  // 429 credits_exhausted also when the key's balance cannot cover max_credits (nothing is spent then).
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'A retried create returns the first task.',
  })
  async create(
    @Principal() principal: Principal,
    @Body() dto: CreateTaskDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Req() request: Request,
  ): Promise<TaskResponse> {
    const forwardKey = outboundCredentialHeaders(request)['X-API-Key'];
    return TaskResponse.of(
      await this.tasks.create(principal, dto, idempotencyKey, forwardKey, this.credits.forRequest(request)),
    );
  }

  @Get()
  @Operation('tasks:read', "List the organization's tasks, newest first; filter by status", TaskPage, 400)
  async list(@Principal() principal: Principal, @Query() query: ListTasksQueryDto): Promise<TaskPage> {
    return mapPage(await this.tasks.list(principal, query), TaskResponse.of);
  }

  @Get(':id')
  @TaskTokenAccess('own_task')
  @Operation(
    'tasks:read',
    'Get a task with its status, result or error; with ?wait=N, once it ends or after N seconds',
    TaskResponse,
    400,
    404,
  )
  async get(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Query() query: GetTaskQueryDto,
  ): Promise<TaskResponse> {
    const task = query.wait
      ? await this.ends.getWhenEnded(principal, id, query.wait)
      : await this.tasks.get(principal, id);
    return TaskResponse.of(task);
  }

  @Get(':id/events')
  @RequirePermissions('tasks:read')
  @ApiOperation({
    summary: "The task's events, oldest first: a list page, or with Accept: text/event-stream a stream",
    description:
      'As Server-Sent Events (`Accept: text/event-stream`): each event with `id:` its number in the task, ' +
      '`event:` its type and `data:` its data as JSON, from the first or after `Last-Event-ID`; a comment ' +
      'line at least every 15 seconds; the stream ends after the terminal `status` event.',
  })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiExtraModels(
    TaskEventPage,
    ...TASK_EVENT_MODELS,
    TaskStatusData,
    TaskProgressData,
    TaskOutputData,
    TaskUsageData,
    TaskOutputFileResponse,
  )
  @ApiHeader({
    name: 'Last-Event-ID',
    required: false,
    description:
      'With the stream: the last event received; the stream resumes after it. At or past the last event of ' +
      'a task that has ended, the stream ends at once, sending nothing; past the last event of a live task, ' +
      'it sends only the events numbered after it and ends after the terminal status.',
  })
  @ApiOkResponse({
    content: {
      'application/json': { schema: { $ref: getSchemaPath(TaskEventPage) } },
      'text/event-stream': {
        schema: {
          type: 'string',
          description:
            'Per event: `id: <seq>`, `event: <type>` (status, progress, output, usage, file) and `data: <JSON>`, ' +
            'the `data` of TaskEventResponse for that type (TaskStatusData, TaskProgressData, TaskOutputData, ' +
            'TaskUsageData, TaskOutputFileResponse).',
        },
      },
    },
  })
  @ApiProblems(400, 404)
  async events(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Query() query: ListQueryDto,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    if (!request.headers.accept?.includes('text/event-stream')) {
      response.json(mapPage(await this.taskEvents.eventPage(principal, id, query), TaskEventResponse.of));
      return;
    }
    const lastEventId = request.headers['last-event-id'];
    const afterSeq = eventCursor(typeof lastEventId === 'string' ? lastEventId.trim() : undefined);
    const task = await this.tasks.get(principal, id);
    response.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
    });
    // Node sends the head with the first write: a stream resumed with nothing new to send would open
    // only at its first heartbeat, 10 s later.
    response.flushHeaders();
    const left = new AbortController();
    response.on('close', () => left.abort());
    await this.taskEvents.followEvents(task, afterSeq, {
      send: (events) => response.write(events.map(serverSentEvent).join('')),
      heartbeat: () => response.write(': keep-alive\n\n'),
      heartbeatMs: SSE_HEARTBEAT_MS,
      signal: left.signal,
    });
    response.end();
  }

  @Post(':id/events')
  @HttpCode(202)
  @TaskTokenAccess('own_task_only')
  @ApiExtraModels(TaskProgressData, TaskOutputData, TaskUsageData)
  @Operation(
    'tasks:create',
    'Report on the run (task token only): progress, a piece of output, or usage (which adds up)',
    Accepted(PostedTaskEventResponse),
    400,
    404,
  )
  // 401 task_token_expired once the run ended; 429 too_many_task_events beyond 10,000 events.
  async postEvent(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: PostTaskEventDto,
  ): Promise<PostedTaskEventResponse> {
    return this.taskEvents.postEvent(principal, id, dto);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @Operation('tasks:update', 'Cancel a queued or running task', TaskResponse, 404, 409)
  async cancel(@Principal() principal: Principal, @Param('id') id: string): Promise<TaskResponse> {
    return TaskResponse.of(await this.ends.cancel(principal, id));
  }
}
