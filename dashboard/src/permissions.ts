/**
 * The signed-in user, for every page: controls the user's permissions do not allow are not offered (the
 * API refuses them anyway), and a page without its read permission says so instead of failing.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { SessionUser } from './api/session';

export const UserContext = createContext<SessionUser | null>(null);

export function useUser(): SessionUser {
  const user = useContext(UserContext);
  if (!user) throw new Error('useUser outside a signed-in session');
  return user;
}

/** `can('api_keys:create')`: whether the signed-in user holds that permission. */
export function useCan(): (permission: string) => boolean {
  const user = useUser();
  // The generated type lists every permission; the pages name them as plain strings.
  const held: readonly string[] = user.permissions;
  return (permission) => held.includes(permission);
}

const EVERY_ACTION = ['create', 'read', 'update', 'delete', 'execute'];

/**
 * The built-in roles' grants as the contract states them ("Permissions and roles"), for telling someone
 * without a permission which role would give it when they may not read the roles themselves.
 */
function builtInRoleHolds(role: string, permission: string): boolean {
  const [resource, action] = permission.split(':');
  switch (role) {
    case 'administrator':
      return true;
    case 'api_manager':
      if (['api_keys', 'webhooks', 'identities'].includes(resource)) return true;
      return action === 'read' && !['users', 'teams'].includes(resource);
    case 'developer':
      if (['agents', 'tasks', 'files', 'workflows'].includes(resource)) return EVERY_ACTION.includes(action);
      return resource === 'deployments' && action === 'read';
    case 'viewer':
      return ['agents', 'tasks', 'files', 'workflows', 'deployments'].includes(resource) && action === 'read';
    default:
      return false;
  }
}

export const BUILT_IN_ROLES = ['viewer', 'developer', 'api_manager', 'administrator'] as const;

/** The built-in roles that hold `permission`, narrowest first. */
export function builtInRolesWith(permission: string): string[] {
  return BUILT_IN_ROLES.filter((role) => builtInRoleHolds(role, permission));
}
