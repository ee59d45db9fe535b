import { Inject, Injectable } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Request } from 'express';
import type { z } from 'zod';
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
import type { EventFollower } from '../tasks/task-event-feed';
import { TaskEvents } from '../tasks/task-events';
import type { Task } from '../tasks/task.entity';
import { TasksService } from '../tasks/tasks.service';
import { FIXED_INPUTS, FIXED_TOOLS, type FixedToolName, RUN_INPUT, runTool } from './mcp-tool-definitions';
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
const FILE_URI = /^gatehouse:\/\/files\/([^/?#]+)$/;

// One validator for every server: the SDK would build one per instance, and a server lives one request.
const SCHEMA_VALIDATOR = new AjvJsonSchemaValidator();

/**
 * The MCP server one HTTP request to /mcp talks to, made for that request's credential: the tools and
 * resources it may use (CONTRACT, "AI assistants"), each a thin call of the service its REST route calls,
 * as that credential. Stateless (no session kept between requests), so every instance answers every
 * request of a client alike. The key check already ran on the HTTP request (the global guards, with a
 * `tools/call`'s tool permission: McpController); what is left here is only what MCP adds.
 *
 * On the SDK's low-level Server, not McpServer: McpServer registers every tool with its zod schema and
 * converts each to JSON Schema on every `tools/list`, which for an organization's hundred agents cost
 * twenty times the REST list (bench/mcp.bench.ts). Here the schemas are made once (mcp-tool-definitions.ts)
 * and a request builds only what it asks for.
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

  serverFor(principal: Principal, request: Request): Server {
    const server = new Server(
      { name: 'gatehouse', version: packageVersion() },
      {
        capabilities: { tools: { listChanged: true }, resources: {} },
        jsonSchemaValidator: SCHEMA_VALIDATOR,
      },
    );
    const may = (permission: string) => principal.permissions.has(permission as never);
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await this.toolsOf(principal) }));
    server.setRequestHandler(CallToolRequestSchema, ({ params }, extra) =>
      this.call(principal, request, params.name, params.arguments ?? {}, extra),
    );
    server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [] }));
    server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
      resourceTemplates: may(FILE_RESOURCE_PERMISSION)
        ? [
            {
              name: 'file',
              uriTemplate: FILE_RESOURCE_TEMPLATE,
              title: 'A file of the organization',
              description: 'An uploaded or output file, by id.',
            },
          ]
        : [],
    }));
    server.setRequestHandler(ReadResourceRequestSchema, ({ params }) => this.readFile(principal, params.uri));
    return server;
  }

  /** What the credential may call: the fixed tools it holds the permission of, and one run tool per agent. */
  private async toolsOf(principal: Principal): Promise<Tool[]> {
    const tools: Tool[] = [];
    for (const [name, tool] of FIXED_TOOLS) {
      if (principal.permissions.has(FIXED_TOOL_PERMISSIONS[name])) tools.push(tool);
    }
    // Run tools are listed only to a credential that may create tasks.
    if (principal.permissions.has(RUN_TOOL_PERMISSION)) {
      for (const [agent, name] of await this.runToolsOf(principal)) tools.push(runTool(agent, name));
    }
    return tools;
  }

  private async runToolsOf(principal: Principal): Promise<[AgentResponse, string][]> {
    const agents = await this.agents.allOldestFirst(principal, MAX_AGENT_TOOLS);
    const names = runToolNames(agents.map((agent) => agent.name));
    return agents.map((agent, index) => [agent, names[index]]);
  }

  /**
   * A `tools/call`. The key check already held it to the tool's permission; a tool the credential could
   * not list is unknown here too (an unknown name adds no permission there, so it reaches this point).
   */
  private async call(
    principal: Principal,
    request: Request,
    name: string,
    args: Record<string, unknown>,
    extra: ToolExtra,
  ): Promise<CallToolResult> {
    if (FIXED_TOOLS.has(name as FixedToolName)) {
      const fixed = name as FixedToolName;
      if (!principal.permissions.has(FIXED_TOOL_PERMISSIONS[fixed])) throw unknownTool(name);
      return this.callFixed(principal, fixed, args);
    }
    const agent = principal.permissions.has(RUN_TOOL_PERMISSION)
      ? (await this.runToolsOf(principal)).find(([, toolName]) => toolName === name)?.[0]
      : undefined;
    if (!agent) throw unknownTool(name);
    const input = parsed(RUN_INPUT, args);
    if (input instanceof ToolInputError) return refusal(input);
    return this.run(principal, request, agent, input, extra);
  }

  private callFixed(principal: Principal, name: FixedToolName, args: Record<string, unknown>) {
    switch (name) {
      case 'list_agents':
        return answer(async () => ({ data: await this.agents.allOldestFirst(principal, MAX_AGENT_TOOLS) }));
      case 'get_task':
        return this.withInput(FIXED_INPUTS.get_task, args, async ({ task_id, wait_seconds }) =>
          taskAnswer(await this.ends.getWhenEnded(principal, task_id, wait_seconds ?? 0)),
        );
      case 'list_tasks':
        return this.withInput(FIXED_INPUTS.list_tasks, args, ({ status, limit }) =>
          answer(async () => {
            const query = (await this.validation.transform(withoutUndefined({ status, limit }), {
              type: 'query',
              metatype: ListTasksQueryDto,
            })) as ListTasksQueryDto;
            const page = await this.tasks.list(principal, query);
            return { data: page.data.map((task) => plain(TaskResponse.of(task))) };
          }),
        );
      case 'cancel_task':
        return this.withInput(FIXED_INPUTS.cancel_task, args, ({ task_id }) =>
          answer(async () => plain(TaskResponse.of(await this.ends.cancel(principal, task_id)))),
        );
      case 'upload_file':
        return this.withInput(FIXED_INPUTS.upload_file, args, (input) => this.upload(principal, input));
    }
  }

  /** Parses a call's arguments, answering a tool error for bad ones; a refusal of the service likewise. */
  private async withInput<S extends z.ZodObject>(
    schema: S,
    args: Record<string, unknown>,
    then: (input: z.infer<S>) => Promise<CallToolResult>,
  ): Promise<CallToolResult> {
    const input = parsed(schema, args);
    if (input instanceof ToolInputError) return refusal(input);
    try {
      return await then(input);
    } catch (error) {
      return refusal(error);
    }
  }

  private async run(
    principal: Principal,
    request: Request,
    agent: AgentResponse,
    { instruction, attachments, max_credits, wait_seconds }: z.infer<typeof RUN_INPUT>,
    extra: ToolExtra,
  ): Promise<CallToolResult> {
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
      task = await this.tasks.create(principal, dto, undefined, forwardKey, this.credits.forRequest(request));
    } catch (error) {
      return refusal(error);
    }
    return taskAnswer(await this.followUntilEnded(principal, task, wait_seconds ?? 30, extra));
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

  private async upload(
    principal: Principal,
    { filename, content, content_base64, content_type }: z.infer<(typeof FIXED_INPUTS)['upload_file']>,
  ): Promise<CallToolResult> {
    return answer(async () => {
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
      const contentType = content_type ?? (content !== undefined ? 'text/plain' : 'application/octet-stream');
      return plain(FileResponse.of(await this.files.store(principal, { filename, contentType, bytes })));
    });
  }

  /** `resources/read` of a file; another organization's answers as an unknown one, naming nothing of it. */
  private async readFile(principal: Principal, uri: string) {
    const id = FILE_URI.exec(uri)?.[1];
    if (!id || !principal.permissions.has(FILE_RESOURCE_PERMISSION)) throw resourceNotFound(uri);
    let opened: Awaited<ReturnType<FilesService['open']>>;
    try {
      opened = await this.files.open(principal, decodeURIComponent(id));
    } catch (error) {
      if (error instanceof DomainError) throw resourceNotFound(uri);
      throw error;
    }
    const bytes = await readAll(opened.content);
    const mimeType = opened.file.contentType;
    return {
      contents: [
        TEXT_TYPES.test(mimeType)
          ? { uri, mimeType, text: bytes.toString('utf8') }
          : { uri, mimeType, blob: bytes.toString('base64') },
      ],
    };
  }
}

const unknownTool = (name: string) => new McpError(ErrorCode.InvalidParams, `Tool ${name} not found`);
const resourceNotFound = (uri: string) => new McpError(ErrorCode.InvalidParams, `Resource ${uri} not found`);

/** A call's arguments parsed, or what is wrong with them. */
function parsed<S extends z.ZodObject>(
  schema: S,
  args: Record<string, unknown>,
): z.infer<S> | ToolInputError {
  const result = schema.safeParse(args);
  if (result.success) return result.data;
  const issues = result.error.issues.map(
    (issue) => `${issue.path.join('.') || 'arguments'}: ${issue.message}`,
  );
  return new ToolInputError(`Invalid arguments: ${issues.join('; ')}`);
}

/** The task as GET /v1/tasks/{id} answers it, its result (or error) as text; an error when it failed. */
function taskAnswer(task: Task): CallToolResult {
  const body = TaskResponse.of(task);
  const ended = task.status === 'failed' || task.status === 'cancelled';
  const text = task.status === 'failed' ? task.error : task.result;
  return {
    structuredContent: plain(body),
    content: [{ type: 'text', text: JSON.stringify(text ?? body) }],
    ...(ended ? { isError: true } : {}),
  };
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
