import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import { ApiHeader, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { outboundCredentialHeaders } from '../auth/outbound-credentials';
import { Principal } from '../access/principal';
import { mapPage } from '../common/pagination';
import { Accepted, Operation } from '../access/route-access.decorators';
import { CreateTaskDto, GetTaskQueryDto, ListTasksQueryDto, TaskPage, TaskResponse } from './dto/task.dto';
import { TasksService } from './tasks.service';

@ApiTags('tasks')
@Controller('v1/tasks')
export class TasksController {
  constructor(private readonly tasks: TasksService) {}

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
    return TaskResponse.of(await this.tasks.create(principal, dto, idempotencyKey, forwardKey));
  }

  @Get()
  @Operation('tasks:read', "List the organization's tasks, newest first; filter by status", TaskPage, 400)
  async list(@Principal() principal: Principal, @Query() query: ListTasksQueryDto): Promise<TaskPage> {
    return mapPage(await this.tasks.list(principal, query), TaskResponse.of);
  }

  @Get(':id')
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
      ? await this.tasks.getWhenEnded(principal, id, query.wait)
      : await this.tasks.get(principal, id);
    return TaskResponse.of(task);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @Operation('tasks:update', 'Cancel a queued or running task', TaskResponse, 404, 409)
  async cancel(@Principal() principal: Principal, @Param('id') id: string): Promise<TaskResponse> {
    return TaskResponse.of(await this.tasks.cancel(principal, id));
  }
}
