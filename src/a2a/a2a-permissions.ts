import type { Permission } from '../roles/permissions';

/**
 * The permission each A2A method needs (CONTRACT, "Agents for other agents: A2A"), by its 1.0 name and
 * its 0.3 one: the two sends create a task; reading a task, its stream or its push configs reads; a
 * cancel and a push config's creation or deletion update. A method not listed needs none of these (the
 * SDK answers it `method not found`, or it reads nothing of the organization's).
 */
const METHOD_PERMISSIONS: Record<string, Permission> = {
  SendMessage: 'tasks:create',
  SendStreamingMessage: 'tasks:create',
  GetTask: 'tasks:read',
  ListTasks: 'tasks:read',
  SubscribeToTask: 'tasks:read',
  GetTaskPushNotificationConfig: 'tasks:read',
  ListTaskPushNotificationConfigs: 'tasks:read',
  CancelTask: 'tasks:update',
  CreateTaskPushNotificationConfig: 'tasks:update',
  DeleteTaskPushNotificationConfig: 'tasks:update',
  'message/send': 'tasks:create',
  'message/stream': 'tasks:create',
  'tasks/get': 'tasks:read',
  'tasks/resubscribe': 'tasks:read',
  'tasks/pushNotificationConfig/get': 'tasks:read',
  'tasks/pushNotificationConfig/list': 'tasks:read',
  'tasks/cancel': 'tasks:update',
  'tasks/pushNotificationConfig/set': 'tasks:update',
  'tasks/pushNotificationConfig/delete': 'tasks:update',
};

/** What a JSON-RPC request to an A2A agent needs, held by the key check (RequirePermissionsForBody). */
export function a2aRequestPermissions(body: unknown): Permission[] {
  if (typeof body !== 'object' || body === null) return [];
  const method = (body as { method?: unknown }).method;
  const permission = typeof method === 'string' ? METHOD_PERMISSIONS[method] : undefined;
  return permission ? [permission] : [];
}
