import { Injectable } from '@nestjs/common';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Request } from 'express';
import { z } from 'zod';
import type { Principal } from '../access/principal';
import { AgentsService } from '../agents/agents.service';
import type { AgentResponse } from '../agents/dto/agent.dto';
import { outboundCredentialHeaders } from '../auth/outbound-credentials';
import { DomainError } from '../common/domain-error';
import { packageVersion } from '../common/package-version';
import { createValidationPipe } from '../common/validation';
import { ConfigOf } from '../config/config-namespace';
import { mcpConfig } from '../config/namespaces';
import { FileResponse } from '../files/dto/file.dto';
import { FilesService } from '../files/files.service';
import { CreateTaskDto, ListTasksQueryDto, TaskResponse } from '../tasks/dto/task.dto';
import { TaskCredits } from '../tasks/task-credits';
import { TaskEnds } from '../tasks/task-ends';
import { TaskEvents } from '../tasks/task-events';
import type { EventFollower } from '../tasks/task-event-feed';
import type { Task } from '../tasks/task.entity';
import { TasksService } from '../tasks/tasks.service';
import { Inject } from '@nestjs/common';
import {
  FILE_RESOURCE_PERMISSION,
  FILE_RESOURCE_TEMPLATE,
  FIXED_TOOL_PERMISSIONS,
  RUN_TOOL_PERMISSION,
  runToolNames,
} from './mcp-tools';

type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** The most agents of one organization that become tools (the built-in ones come on top). */
const MAX_AGENT_TOOLS = 1000;

/** How long an SSE follower of a task's events may stay quiet; MCP needs no heartbeat of its own. */
const PROGRESS_HEARTBEAT_MS = 60_000;

const TEXT_TYPES = /^(text\/|application\/(json|[a-z0-9.+-]+\+json)(;|$))/i;

/**
 * The MCP server one HTTP request to /mcp talks to, made for that request's credential: the tools and
 * resources it may use (CONTRACT, "AI assistants"), each a thin call of the service its REST route calls,
 * as that credential. Stateless (no session kept between requests), so every instance answers every
 * request of a client alike. The key check already ran on the HTTP request (the global guards, with a
 * `tools/call`'s tool permission: McpController); what is left here is only what MCP adds.
 */
@Injectable()
export class McpServerFactory {
  private readonly validation = createValidationPipe();

  constructor(
    private readonly agents: AgentsService,
    private readonly tasks: TasksService,
    private readonly ends: TaskEnds,
    private readonly taskEvents: TaskEvents,
    private readonly credits: TaskCredits,
    private readonly files: FilesService,
    @Inject(mcpConfig.KEY) private readonly config: ConfigOf<typeof mcpConfig>,
  ) {}

  async serverFor(principal: Principal, request: Request): Promise<McpServer> {
    const server = new McpServer(
      { name: 'gatehouse', version: packageVersion() },
      { capabilities: { tools: { listChanged: true }, resources: {} } },
    );
    const may = (permission: string) => principal.permissions.has(permission as never);
    const fixed = (name: keyof typeof FIXED_TOOL_PERMISSIONS & string) => may(FIXED_TOOL_PERMISSIONS[name]);

    if (fixed('list_agents')) this.listAgentsTool(server, principal);
    // Run tools are listed only to a credential that may create tasks and see the agents they stand for.
    if (may(RUN_TOOL_PERMISSION)) await this.runTools(server, principal, request);
    if (fixed('get_task')) this.getTaskTool(server, principal);
    if (fixed('list_tasks')) this.listTasksTool(server, principal);
    if (fixed('cancel_task')) this.cancelTaskTool(server, principal);
    if (fixed('upload_file')) this.uploadFileTool(server, principal);
    if (may(FILE_RESOURCE_PERMISSION)) this.fileResource(server, principal);
    return server;
  }

  private listAgentsTool(server: McpServer, principal: Principal): void {
    server.registerTool(
      'list_agents',
      { title: 'List agents', description: 'The agents of the organization, as GET /v1/agents lists them.' },
      () =>
        answer(async () => {
          const data = await this.agents.allOldestFirst(principal, MAX_AGENT_TOOLS);
          return { data };
        }),
    );
  }

  private async runTools(server: McpServer, principal: Principal, request: Request): Promise<void> {
    const agents = await this.agents.allOldestFirst(principal, MAX_AGENT_TOOLS);
    const names = runToolNames(agents.map((agent) => agent.name));
    agents.forEach((agent, index) => this.runTool(server, principal, request, agent, names[index]));
  }

  private runTool(
    server: McpServer,
    principal: Principal,
    request: Request,
    agent: AgentResponse,
    name: string,
  ): void {
    server.registerTool(
      name,
      {
        title: agent.name,
        description: agent.description ?? `Runs the agent ${agent.name} on an instruction.`,
        _meta: { 'gatehouse/agent_id': agent.id },
        inputSchema: {
          instruction: z.string().describe('What the agent should do.'),
          attachments: z.array(z.string()).optional().describe('File ids (upload_file) the task uses.'),
          max_credits: z
            .number()
            .int()
            .min(0)
            .max(1_000_000_000)
            .optional()
            .describe('Credits reserved for the run.'),
          wait_seconds: z.number().int().min(0).max(60).optional().describe('How long to wait (default 30).'),
        },
      },
      async ({ instruction, attachments, max_credits, wait_seconds }, extra) => {
        let task: Task;
        try {
          // What POST /v1/tasks does with the same body: its validation, credits reservation and events.
          const dto = (await this.validation.transform(
            withoutUndefined({
              instruction,
              attachments,
              max_credits,
              agent_type: agent.type,
              agent_id: agent.id,
            }),
            { type: 'body', metatype: CreateTaskDto },
          )) as CreateTaskDto;
          const forwardKey = outboundCredentialHeaders(request)['X-API-Key'];
          task = await this.tasks.create(
            principal,
            dto,
            undefined,
            forwardKey,
            this.credits.forRequest(request),
          );
        } catch (error) {
          return refusal(error);
        }
        return this.taskAnswer(await this.followUntilEnded(principal, task, wait_seconds ?? 30, extra));
      },
    );
  }

  /**
   * The task once it ended or `seconds` passed; meanwhile, when the call asked for progress (a
   * progressToken), its `progress` events as notifications/progress on the call's own stream.
   */
  private async followUntilEnded(principal: Principal, task: Task, seconds: number, extra: ToolExtra) {
    const progressToken = extra._meta?.progressToken;
    if (progressToken === undefined || seconds === 0)
      return this.ends.getWhenEnded(principal, task.id, seconds);
    const left = new AbortController();
    let last = 0;
    const following = this.taskEvents.followEvents(task, 0, {
      send: (events: Parameters<EventFollower['send']>[0]) => {
        for (const event of events) {
          if (event.type !== 'progress') continue;
          const data = event.data as { percent?: number; message?: string };
          // MCP's progress only grows: an event without a higher percent repeats the last value.
          if (typeof data.percent === 'number' && data.percent > last) last = data.percent;
          void extra
            .sendNotification({
              method: 'notifications/progress',
              params: {
                progressToken,
                progress: last,
                total: 100,
                ...(data.message ? { message: data.message } : {}),
              },
            })
            .catch(() => undefined); // the client left: the call's answer is what matters
        }
      },
      heartbeat: () => undefined,
      heartbeatMs: PROGRESS_HEARTBEAT_MS,
      signal: left.signal,
    });
    try {
      return await this.ends.getWhenEnded(principal, task.id, seconds);
    } finally {
      left.abort();
      await following.catch(() => undefined);
    }
  }

  private taskAnswer(task: Task): CallToolResult {
    const body = TaskResponse.of(task);
    const ended = task.status === 'failed' || task.status === 'cancelled';
    const text = task.status === 'failed' ? task.error : task.result;
    return {
      structuredContent: plain(body),
      content: [{ type: 'text', text: JSON.stringify(text ?? body) }],
      ...(ended ? { isError: true } : {}),
    };
  }

  private getTaskTool(server: McpServer, principal: Principal): void {
    server.registerTool(
      'get_task',
      {
        title: 'Get a task',
        description: 'A task with its status, result or error; with wait_seconds, once it ends.',
        inputSchema: {
          task_id: z.string(),
          wait_seconds: z.number().int().min(0).max(60).optional(),
        },
      },
      async ({ task_id, wait_seconds }) => {
        try {
          const task = await this.ends.getWhenEnded(principal, task_id, wait_seconds ?? 0);
          return this.taskAnswer(task);
        } catch (error) {
          return refusal(error);
        }
      },
    );
  }

  private listTasksTool(server: McpServer, principal: Principal): void {
    server.registerTool(
      'list_tasks',
      {
        title: 'List tasks',
        description: "The organization's tasks, newest first; filter by status.",
        inputSchema: { status: z.string().optional(), limit: z.number().int().min(1).max(100).optional() },
      },
      ({ status, limit }) =>
        answer(async () => {
          const query = (await this.validation.transform(withoutUndefined({ status, limit }), {
            type: 'query',
            metatype: ListTasksQueryDto,
          })) as ListTasksQueryDto;
          const page = await this.tasks.list(principal, query);
          return { data: page.data.map((task) => plain(TaskResponse.of(task))) };
        }),
    );
  }

  private cancelTaskTool(server: McpServer, principal: Principal): void {
    server.registerTool(
      'cancel_task',
      {
        title: 'Cancel a task',
        description: 'Cancels a queued or running task, as POST /v1/tasks/{id}/cancel.',
        inputSchema: { task_id: z.string() },
      },
      ({ task_id }) => answer(async () => plain(TaskResponse.of(await this.ends.cancel(principal, task_id)))),
    );
  }

  private uploadFileTool(server: McpServer, principal: Principal): void {
    server.registerTool(
      'upload_file',
      {
        title: 'Upload a file',
        description: 'Stores a file that tasks can use (content as text, or content_base64 for bytes).',
        inputSchema: {
          filename: z.string(),
          content: z.string().optional(),
          content_base64: z.string().optional(),
          content_type: z.string().optional(),
        },
      },
      ({ filename, content, content_base64, content_type }) =>
        answer(async () => {
          if ((content === undefined) === (content_base64 === undefined)) {
            throw new ToolInputError('Send exactly one of content and content_base64.');
          }
          const bytes =
            content_base64 !== undefined
              ? Buffer.from(content_base64, 'base64')
              : Buffer.from(content ?? '', 'utf8');
          if (bytes.length > this.config.maxUploadBytes) {
            throw new ToolInputError(`The file is larger than ${this.config.maxUploadBytes} bytes.`);
          }
          const contentType =
            content_type ?? (content !== undefined ? 'text/plain' : 'application/octet-stream');
          return plain(FileResponse.of(await this.files.store(principal, { filename, contentType, bytes })));
        }),
    );
  }

  private fileResource(server: McpServer, principal: Principal): void {
    server.registerResource(
      'file',
      new ResourceTemplate(FILE_RESOURCE_TEMPLATE, { list: undefined }),
      { title: 'A file of the organization', description: 'An uploaded or output file, by id.' },
      async (uri, variables) => {
        const id = String(variables.id);
        let opened: Awaited<ReturnType<FilesService['open']>>;
        try {
          opened = await this.files.open(principal, id);
        } catch (error) {
          // Another organization's file answers as an unknown one: nothing of it is named.
          if (error instanceof DomainError)
            throw new McpError(ErrorCode.InvalidParams, `Resource ${uri.href} not found`);
          throw error;
        }
        const bytes = await readAll(opened.content);
        const mimeType = opened.file.contentType;
        return {
          contents: [
            TEXT_TYPES.test(mimeType)
              ? { uri: uri.href, mimeType, text: bytes.toString('utf8') }
              : { uri: uri.href, mimeType, blob: bytes.toString('base64') },
          ],
        };
      },
    );
  }
}

/** A caller's mistake in a tool's input that no REST validation covers (upload_file's content). */
class ToolInputError extends Error {}

/** A tool's structured answer, or its refusal as a tool error. */
async function answer(run: () => Promise<Record<string, unknown>>): Promise<CallToolResult> {
  try {
    const structuredContent = await run();
    return { structuredContent, content: [{ type: 'text', text: JSON.stringify(structuredContent) }] };
  } catch (error) {
    return refusal(error);
  }
}

/**
 * A refusal of the service (its domain errors: validation, not found, conflicts) as a tool result the
 * model reads; anything else is a fault and propagates (the SDK answers it as an internal error).
 */
function refusal(error: unknown): CallToolResult {
  if (!(error instanceof DomainError) && !(error instanceof ToolInputError)) throw error;
  const code = error instanceof DomainError ? error.code : 'invalid_input';
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify({ code, detail: error.message }) }],
  };
}

/** A DTO class instance as the plain JSON object MCP sends. */
function plain(value: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}

function withoutUndefined(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}
