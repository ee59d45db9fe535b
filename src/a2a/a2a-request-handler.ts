import { randomUUID } from 'node:crypto';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task as A2aTask,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  ExtendedAgentCardNotConfiguredError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import type { Agent } from '../agents/agent.entity';
import type { Principal } from '../access/principal';
import type { FilesService } from '../files/files.service';
import type { TaskCreditReserver } from '../tasks/tasks.service';
import type { TaskEnds } from '../tasks/task-ends';
import type { TaskEvents } from '../tasks/task-events';
import type { TaskEventRow } from '../tasks/task-events';
import { ACTIVE_TASK_STATUSES, type Task } from '../tasks/task.entity';
import { TaskError, TaskErrorCode } from '../tasks/tasks.errors';
import type { TasksService } from '../tasks/tasks.service';
import { CreateTaskDto } from '../tasks/dto/task.dto';
import { storeInlineFiles, taskInputOf } from './a2a-messages';
import { taskStatusOf } from './a2a-task-states';
import { A2aTaskViews } from './a2a-task-views';
import { A2aPushConfigNotFound, A2aPushUrlRefused, type A2aPushConfigs } from './push/a2a-push-configs';

/** A blocking SendMessage waits for the task's end in long polls of this many seconds. */
const WAIT_SECONDS = 60;
const LIST_PAGE_SIZE = 50;

/** What the handler of one request needs of the app (A2aAgents makes it). */
export interface A2aHandlerDeps {
  tasks: TasksService;
  taskEvents: TaskEvents;
  ends: TaskEnds;
  files: FilesService;
  push: A2aPushConfigs;
  views: A2aTaskViews;
  publicUrl: string;
}

/** The request's own: its credential's principal, its credit reserver and the key a task may forward. */
export interface A2aCaller {
  principal: Principal;
  credits?: TaskCreditReserver;
  forwardKey?: string;
  /** Aborted when the client leaves: a blocking send stops waiting, a stream stops following. */
  signal: AbortSignal;
}

/**
 * One agent's A2A face for one request (the SDK's A2ARequestHandler, in front of its JSON-RPC transport
 * handlers), on Gatehouse's own task machinery rather than the SDK's in-memory store and executor: a
 * message is a task of the agent (TasksService, so the key check, credits and audit of POST /v1/tasks
 * apply), a task's A2A state is read from the task, and streams follow the task's events (TaskEvents,
 * across instances). Only this agent's tasks are seen through its URL; another organization's, or
 * another agent's, are not found.
 */
export class GatehouseA2aHandler implements A2ARequestHandler {
  constructor(
    private readonly deps: A2aHandlerDeps,
    private readonly agent: Readonly<Agent>,
    private readonly card: AgentCard,
    private readonly caller: A2aCaller,
  ) {}

  getAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.card);
  }

  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return Promise.reject(new ExtendedAgentCardNotConfiguredError('The agents have no extended card.'));
  }

  async sendMessage(params: SendMessageRequest): Promise<Message | A2aTask> {
    let task = await this.createTask(params);
    if (!params.configuration?.returnImmediately) {
      while (ACTIVE_TASK_STATUSES.includes(task.status) && !this.caller.signal.aborted) {
        task = await this.deps.ends.getWhenEnded(this.caller.principal, task.id, WAIT_SECONDS);
      }
    }
    return this.viewOf(task, params.configuration?.historyLength);
  }

  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    yield* this.follow(await this.createTask(params));
  }

  async getTask(params: GetTaskRequest): Promise<A2aTask> {
    return this.viewOf(await this.taskOf(params.id), params.historyLength);
  }

  async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    const status = params.status ? taskStatusOf(params.status) : undefined;
    if (params.status && !status) return { tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 };
    const limit = Math.min(Math.max(params.pageSize ?? LIST_PAGE_SIZE, 1), 100);
    const page = await this.deps.tasks
      .listOfAgent(
        this.caller.principal,
        this.agent.id,
        { status, contextId: params.contextId || undefined },
        { limit, cursor: params.pageToken || undefined },
      )
      .catch(invalidCursorAsMalformed);
    const tasks = await Promise.all(
      page.data.map((task) => this.viewOf(task, params.historyLength, params.includeArtifacts ?? false)),
    );
    // totalSize is not counted (a count of every task of the conversation for each page): the page's.
    return { tasks, nextPageToken: page.next_cursor ?? '', pageSize: tasks.length, totalSize: tasks.length };
  }

  async cancelTask(params: CancelTaskRequest): Promise<A2aTask> {
    const task = await this.taskOf(params.id);
    try {
      return await this.viewOf(await this.deps.ends.cancel(this.caller.principal, task.id));
    } catch (error) {
      if (error instanceof TaskError && error.code === TaskErrorCode.TaskFinished) {
        throw new TaskNotCancelableError(`The task is already ${task.status}.`);
      }
      throw error;
    }
  }

  async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const task = await this.taskOf(params.id);
    if (!ACTIVE_TASK_STATUSES.includes(task.status)) {
      throw new UnsupportedOperationError(
        `The task is ${task.status}: a finished task has no stream to follow.`,
      );
    }
    yield* this.follow(task);
  }

  async createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
  ): Promise<TaskPushNotificationConfig> {
    const task = await this.taskOf(params.taskId);
    const config = await this.deps.push
      .create(this.caller.principal, task.id, {
        ...(params.id ? { id: params.id } : {}),
        url: params.url,
        ...(params.token ? { token: params.token } : {}),
      })
      .catch(pushErrorAsA2a);
    return pushConfigOf(config);
  }

  async getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
  ): Promise<TaskPushNotificationConfig> {
    const task = await this.taskOf(params.taskId);
    return pushConfigOf(
      await this.deps.push.get(this.caller.principal, task.id, params.id).catch(pushErrorAsA2a),
    );
  }

  async listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsRequest,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    const task = await this.taskOf(params.taskId);
    const configs = await this.deps.push.list(this.caller.principal, task.id);
    return { configs: configs.map(pushConfigOf), nextPageToken: '' };
  }

  async deleteTaskPushNotificationConfig(params: DeleteTaskPushNotificationConfigRequest): Promise<void> {
    const task = await this.taskOf(params.taskId);
    await this.deps.push.delete(this.caller.principal, task.id, params.id).catch(pushErrorAsA2a);
  }

  /** A message as a new task of this agent, checked as POST /v1/tasks checks its body. */
  private async createTask(params: SendMessageRequest): Promise<Task> {
    const { principal } = this.caller;
    const input = await taskInputOf(
      params.message,
      params.metadata,
      principal,
      this.deps.files,
      this.deps.publicUrl,
    );
    const dto = plainToInstance(CreateTaskDto, {
      instruction: input.instruction,
      agent_type: this.agent.type,
      agent_id: this.agent.id,
      attachments: input.attachments,
      ...(input.maxCredits !== undefined ? { max_credits: input.maxCredits } : {}),
    });
    const problems = await validate(dto, { whitelist: true, forbidNonWhitelisted: true });
    if (problems.length) {
      const messages = problems.flatMap((problem) => Object.values(problem.constraints ?? {}));
      throw new RequestMalformedError(`The message is not a valid task: ${messages.join('; ')}.`);
    }
    // Inline files are stored once the rest is known valid.
    dto.attachments = [...input.attachments, ...(await storeInlineFiles(input, principal, this.deps.files))];
    const contextId = params.message?.contextId || randomUUID();
    return this.deps.tasks
      .create(principal, dto, undefined, this.caller.forwardKey, this.caller.credits, contextId)
      .catch(taskErrorAsA2a);
  }

  /** One of this agent's tasks in the caller's organization; any other is not found, alike. */
  private async taskOf(id: string): Promise<Task> {
    const task = await this.deps.tasks.get(this.caller.principal, id).catch(taskErrorAsA2a);
    if (task.agentId !== this.agent.id && !(task.agentId === null && task.agentType === this.agent.type)) {
      throw new TaskNotFoundError(`Task ${id} was not found.`);
    }
    return task;
  }

  private async viewOf(task: Task, historyLength?: number, withArtifacts = true): Promise<A2aTask> {
    const finished = !ACTIVE_TASK_STATUSES.includes(task.status);
    const output = finished && withArtifacts ? await this.deps.taskEvents.outputText(task) : undefined;
    return this.deps.views.taskOf(task, output, historyLength);
  }

  /**
   * The task's stream: its current state first, then its events as they come (across instances, as
   * GET /v1/tasks/{id}/events follows them), until its terminal status, the client's leaving, or the
   * process's shutdown. A finished task's result comes as an artifact before its last status update.
   */
  private async *follow(created: Task): AsyncGenerator<StreamResponse, void, undefined> {
    // The events up to the one read first are in the task as shown; an event between the two reads
    // comes again as an update, which says nothing the task does not.
    const afterSeq = await this.deps.taskEvents.lastSeq(created);
    const task = await this.deps.tasks.get(this.caller.principal, created.id);
    yield { payload: { $case: 'task', value: await this.viewOf(task) } };
    const queue = new EventQueue();
    const followed = this.deps.taskEvents
      .followEvents(task, afterSeq, {
        send: (events) => queue.push(events),
        heartbeat: () => undefined,
        heartbeatMs: 60_000,
        signal: this.caller.signal,
      })
      .finally(() => queue.close());
    let firstOutput = true;
    for await (const event of queue) {
      if (event.type === 'status' && event.data.status === 'succeeded') {
        // The output and its files came as they were made; the result is known only now.
        const ended = await this.deps.tasks.get(this.caller.principal, task.id);
        yield this.deps.views.resultUpdateOf(ended);
      }
      const response = this.deps.views.streamResponseOf(task, event, firstOutput);
      if (event.type === 'output') firstOutput = false;
      if (response) yield response;
    }
    await followed;
  }
}

/** Rows handed over by the event feed, read by the stream in order. */
class EventQueue implements AsyncIterable<TaskEventRow> {
  private readonly rows: TaskEventRow[] = [];
  private wake?: () => void;
  private closed = false;

  push(rows: TaskEventRow[]): void {
    this.rows.push(...rows);
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator]() {
    for (;;) {
      const row = this.rows.shift();
      if (row) {
        yield row;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}

function pushConfigOf(config: { id: string; taskId: string; url: string }): TaskPushNotificationConfig {
  // The token is the client's own secret for its receiver: never sent back.
  return {
    tenant: '',
    id: config.id,
    taskId: config.taskId,
    url: config.url,
    token: '',
    authentication: undefined,
  };
}

function taskErrorAsA2a(error: unknown): never {
  if (error instanceof TaskError && error.code === TaskErrorCode.NotFound) {
    throw new TaskNotFoundError(error.message);
  }
  throw error;
}

function pushErrorAsA2a(error: unknown): never {
  if (error instanceof A2aPushConfigNotFound || error instanceof A2aPushUrlRefused) {
    throw new RequestMalformedError((error as Error).message);
  }
  return taskErrorAsA2a(error);
}

function invalidCursorAsMalformed(error: unknown): never {
  if ((error as { code?: string }).code === 'invalid_cursor') {
    throw new RequestMalformedError('The pageToken is not one this server gave.');
  }
  throw error;
}
