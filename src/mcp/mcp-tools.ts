import type { Permission } from '../roles/permissions';

/**
 * The MCP server's vocabulary (CONTRACT, "AI assistants"): each tool stands for a REST route and needs
 * that route's permission. Pure, so the key check (which decides a `tools/call`'s permission from the
 * request body, before anything runs) and the server that registers the tools read one table.
 */
export const FIXED_TOOL_PERMISSIONS: Readonly<Record<string, Permission>> = {
  list_agents: 'agents:read',
  get_task: 'tasks:read',
  list_tasks: 'tasks:read',
  cancel_task: 'tasks:update',
  upload_file: 'files:create',
};

/** What every `run_<agent>` tool needs: it creates a task as POST /v1/tasks does. */
export const RUN_TOOL_PERMISSION: Permission = 'tasks:create';
const RUN_TOOL_PREFIX = 'run_';

/** What `resources/read` of `gatehouse://files/{id}` needs, as GET /v1/files/{id}/content. */
export const FILE_RESOURCE_PERMISSION: Permission = 'files:read';
export const FILE_RESOURCE_TEMPLATE = 'gatehouse://files/{id}';

/** The permission a tool needs; undefined for a name that is no tool (the call answers an error). */
export function toolPermission(name: string): Permission | undefined {
  if (Object.hasOwn(FIXED_TOOL_PERMISSIONS, name)) return FIXED_TOOL_PERMISSIONS[name];
  return name.startsWith(RUN_TOOL_PREFIX) ? RUN_TOOL_PERMISSION : undefined;
}

/**
 * The permissions one HTTP request to /mcp needs beyond a valid credential, read from its JSON-RPC
 * body: a `tools/call` its tool's, a `resources/read` files:read; anything else (initialize, lists,
 * notifications, responses) none, since what a list shows is filtered by the credential instead. A
 * batch (revisions before 2025-06-18) needs the union of its messages'.
 */
export function mcpRequestPermissions(body: unknown): Permission[] {
  const messages = Array.isArray(body) ? body : [body];
  const needed = new Set<Permission>();
  for (const message of messages) {
    const permission = messagePermission(message);
    if (permission) needed.add(permission);
  }
  return [...needed];
}

function messagePermission(message: unknown): Permission | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const { method, params } = message as { method?: unknown; params?: { name?: unknown } };
  if (method === 'tools/call' && typeof params?.name === 'string') return toolPermission(params.name);
  if (method === 'resources/read') return FILE_RESOURCE_PERMISSION;
  return undefined;
}

/**
 * Tool names for agents, oldest first: `run_` + the name in lower case, each run of characters other
 * than a-z and 0-9 as one `_`; a name already taken in the organization gets `_2`, `_3`, … in the order
 * given, so the oldest agent keeps the plain name and a new agent never renames an old one's tool.
 */
export function runToolNames(agentNames: readonly string[]): string[] {
  const taken = new Set<string>(Object.keys(FIXED_TOOL_PERMISSIONS));
  return agentNames.map((agentName) => {
    const base = RUN_TOOL_PREFIX + agentName.toLowerCase().replace(/[^a-z0-9]+/g, '_');
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
    taken.add(name);
    return name;
  });
}
