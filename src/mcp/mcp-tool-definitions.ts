import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { AgentResponse } from '../agents/dto/agent.dto';

/**
 * The tools' input schemas, made once per process: zod to parse a call's arguments, and the JSON Schema
 * `tools/list` shows, converted once here rather than for every tool of every list (an organization with
 * a hundred agents lists a hundred run tools, all with the same input).
 */

const TASK_WAIT = z.number().int().min(0).max(60);

export const RUN_INPUT = z.object({
  instruction: z.string().describe('What the agent should do.'),
  attachments: z.array(z.string()).optional().describe('File ids (upload_file) the task uses.'),
  max_credits: z
    .number()
    .int()
    .min(0)
    .max(1_000_000_000)
    .optional()
    .describe('Credits reserved for the run.'),
  wait_seconds: TASK_WAIT.optional().describe('How long to wait for the task to end (default 30).'),
});

export const FIXED_INPUTS = {
  list_agents: z.object({}),
  get_task: z.object({ task_id: z.string(), wait_seconds: TASK_WAIT.optional() }),
  list_tasks: z.object({ status: z.string().optional(), limit: z.number().int().min(1).max(100).optional() }),
  cancel_task: z.object({ task_id: z.string() }),
  upload_file: z.object({
    filename: z.string(),
    content: z.string().optional(),
    content_base64: z.string().optional(),
    content_type: z.string().optional(),
  }),
} as const;

export type FixedToolName = keyof typeof FIXED_INPUTS;

const FIXED_TEXT: Record<FixedToolName, { title: string; description: string }> = {
  list_agents: {
    title: 'List agents',
    description: 'The agents of the organization, as GET /v1/agents lists them.',
  },
  get_task: {
    title: 'Get a task',
    description: 'A task with its status, result or error; with wait_seconds, once it ends.',
  },
  list_tasks: {
    title: 'List tasks',
    description: "The organization's tasks, newest first; filter by status.",
  },
  cancel_task: {
    title: 'Cancel a task',
    description: 'Cancels a queued or running task, as POST /v1/tasks/{id}/cancel.',
  },
  upload_file: {
    title: 'Upload a file',
    description: 'Stores a file that tasks can use (content as text, or content_base64 for bytes).',
  },
};

function jsonSchemaOf(schema: z.ZodObject): Tool['inputSchema'] {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema) as Record<string, unknown>;
  return json as Tool['inputSchema'];
}

const RUN_INPUT_SCHEMA = jsonSchemaOf(RUN_INPUT);

/** The fixed tools as `tools/list` shows them, in the order it lists them. */
export const FIXED_TOOLS: ReadonlyMap<FixedToolName, Tool> = new Map(
  (Object.keys(FIXED_INPUTS) as FixedToolName[]).map((name) => [
    name,
    { name, ...FIXED_TEXT[name], inputSchema: jsonSchemaOf(FIXED_INPUTS[name]) },
  ]),
);

/** An agent's run tool as `tools/list` shows it. */
export function runTool(agent: AgentResponse, name: string): Tool {
  return {
    name,
    title: agent.name,
    description: agent.description ?? `Runs the agent ${agent.name} on an instruction.`,
    inputSchema: RUN_INPUT_SCHEMA,
    _meta: { 'gatehouse/agent_id': agent.id },
  };
}
