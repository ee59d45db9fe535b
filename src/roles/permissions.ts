/**
 * The permission vocabulary. A permission is `<resource>:<action>`; a grant check is a set test, so
 * neither wildcards nor hierarchies exist to reason about.
 */
export const RESOURCES = [
  'agents',
  'tasks',
  'files',
  'workflows',
  'deployments',
  'users',
  'teams',
  'roles',
  'api_keys',
  'audit',
  'webhooks',
] as const;
export const ACTIONS = ['create', 'read', 'update', 'delete', 'execute'] as const;

export type Resource = (typeof RESOURCES)[number];
export type Action = (typeof ACTIONS)[number];
export type Permission = `${Resource}:${Action}`;

export const ALL_PERMISSIONS: readonly Permission[] = RESOURCES.flatMap((resource) =>
  ACTIONS.map((action) => `${resource}:${action}` as Permission),
);

const PERMISSION_SET: ReadonlySet<string> = new Set(ALL_PERMISSIONS);

export function isPermission(value: string): value is Permission {
  return PERMISSION_SET.has(value);
}

export function isResource(value: string): value is Resource {
  return (RESOURCES as readonly string[]).includes(value);
}

export function isAction(value: string): value is Action {
  return (ACTIONS as readonly string[]).includes(value);
}

const every = (resource: Resource): Permission[] =>
  ACTIONS.map((action) => `${resource}:${action}` as Permission);
const read = (resource: Resource): Permission => `${resource}:read`;

export const BUILT_IN_ROLE_NAMES = ['viewer', 'developer', 'administrator', 'api_manager'] as const;
export type BuiltInRoleName = (typeof BUILT_IN_ROLE_NAMES)[number];

/** The contract's four built-in roles. */
export const BUILT_IN_ROLES: Readonly<Record<BuiltInRoleName, ReadonlySet<Permission>>> = {
  viewer: new Set((['agents', 'tasks', 'files', 'workflows', 'deployments'] as const).map(read)),
  developer: new Set([
    ...(['agents', 'tasks', 'files', 'workflows'] as const).flatMap(every),
    read('deployments'),
  ]),
  administrator: new Set(ALL_PERMISSIONS),
  api_manager: new Set([
    ...every('api_keys'),
    ...every('webhooks'),
    ...RESOURCES.filter((r) => !['api_keys', 'webhooks', 'users', 'teams'].includes(r)).map(read),
  ]),
};

export function isBuiltInRole(name: string): name is BuiltInRoleName {
  return (BUILT_IN_ROLE_NAMES as readonly string[]).includes(name);
}

/** Permissions in `wanted` that `held` lacks; empty means `held` covers `wanted`. */
export function missingPermissions(
  held: ReadonlySet<Permission>,
  wanted: Iterable<Permission>,
): Permission[] {
  const missing: Permission[] = [];
  for (const permission of wanted) if (!held.has(permission)) missing.push(permission);
  return missing;
}

export function intersectPermissions(
  a: ReadonlySet<Permission>,
  b: ReadonlySet<Permission>,
): Set<Permission> {
  const out = new Set<Permission>();
  for (const permission of a) if (b.has(permission)) out.add(permission);
  return out;
}

const sortedLists = new WeakMap<ReadonlySet<Permission>, Permission[]>();

/**
 * Stable, sorted wire form. Permission sets are shared and never mutated once built (roles, cached
 * keys), so the sorted list is remembered per set instead of sorted on every request.
 */
export function permissionList(permissions: Iterable<Permission>): Permission[] {
  if (permissions instanceof Set) {
    let list = sortedLists.get(permissions);
    if (!list) sortedLists.set(permissions, (list = [...permissions].sort()));
    return [...list];
  }
  return [...permissions].sort();
}
