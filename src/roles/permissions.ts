/**
 * The permission vocabulary. A permission is `<resource>:<action>`; a grant check is a set test, so
 * neither wildcards nor hierarchies exist to reason about.
 *
 * The vocabulary is a registry, not a closed list: each module declares its own resources in its own
 * folder (`<module>.declarations.ts`) with `definePermissions`, including what the built-in roles hold on
 * them. Everything else (validation of custom roles, the built-in roles, `GET /v1/permissions`, the
 * OpenAPI enums, the dashboard's matrix) reads the catalogue built from those declarations.
 */

/** The actions a resource has unless it declares its own. */
export const STANDARD_ACTIONS = ['create', 'read', 'update', 'delete', 'execute'] as const;

export const BUILT_IN_ROLE_NAMES = ['viewer', 'developer', 'administrator', 'api_manager'] as const;
export type BuiltInRoleName = (typeof BUILT_IN_ROLE_NAMES)[number];

/** `<resource>:<action>`; whether one exists is a question for the catalogue (`isPermission`). */
export type Permission = `${string}:${string}`;

/** What a built-in role holds on a resource: every action, or the ones listed. */
export type Grant = 'all' | readonly string[];

export interface ResourceDeclaration {
  /** The resource's actions; the standard five when omitted. */
  actions?: readonly string[];
  /**
   * What the built-in roles hold on it. `administrator` holds every action of every resource and is
   * not named here; a role left out holds nothing on the resource (deny by default).
   */
  grants?: Partial<Record<Exclude<BuiltInRoleName, 'administrator'>, Grant>>;
}

export interface CatalogueResource {
  resource: string;
  actions: readonly string[];
}

interface Catalogue {
  resources: readonly CatalogueResource[];
  actions: readonly string[];
  permissions: readonly Permission[];
  permissionSet: ReadonlySet<string>;
  actionsByResource: ReadonlyMap<string, readonly string[]>;
  builtInRoles: Readonly<Record<BuiltInRoleName, ReadonlySet<Permission>>>;
}

const NAME = /^[a-z][a-z0-9_]{0,39}$/;
const declarations = new Map<string, Required<ResourceDeclaration>>();
let catalogue: Catalogue | undefined;

/**
 * Declares a resource, its actions and the built-in roles' grants on it. Call it at the top level of a
 * module's own declarations file, which the module imports: the catalogue is built the first time it is
 * read and is fixed from then on, so a declaration that comes later is a mistake, reported at once.
 */
export function definePermissions(
  resource: string,
  declaration: ResourceDeclaration = {},
): CatalogueResource {
  if (catalogue) {
    throw new Error(
      `definePermissions('${resource}') came after the permission catalogue was read: declare permissions ` +
        `at the top level of a file the module imports, so they are known before the app starts`,
    );
  }
  if (!NAME.test(resource)) throw new Error(`resource name "${resource}" must match ${NAME}`);
  if (declarations.has(resource)) throw new Error(`resource "${resource}" is declared twice`);
  const actions = [...(declaration.actions ?? STANDARD_ACTIONS)];
  for (const action of actions) {
    if (!NAME.test(action)) throw new Error(`action "${resource}:${action}" must match ${NAME}`);
  }
  const grants = declaration.grants ?? {};
  for (const [role, grant] of Object.entries(grants)) {
    const unknown = grant === 'all' ? [] : grant.filter((action) => !actions.includes(action));
    if (unknown.length)
      throw new Error(`${role} is granted unknown actions of ${resource}: ${unknown.join(', ')}`);
  }
  declarations.set(resource, { actions, grants });
  return { resource, actions };
}

function buildCatalogue(): Catalogue {
  const resources = [...declarations.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([resource, { actions }]) => ({ resource, actions }));
  const permissions = resources.flatMap(({ resource, actions }) =>
    actions.map((action): Permission => `${resource}:${action}`),
  );
  const granted = (role: Exclude<BuiltInRoleName, 'administrator'>): Set<Permission> =>
    new Set(
      [...declarations.entries()].flatMap(([resource, { actions, grants }]) => {
        const grant = grants[role] ?? [];
        return (grant === 'all' ? actions : grant).map((action): Permission => `${resource}:${action}`);
      }),
    );
  // The union of every resource's actions, in the order they were first declared: the matrix's columns.
  const actions = [...new Set([...STANDARD_ACTIONS, ...resources.flatMap((r) => r.actions)])];
  return {
    resources,
    actions,
    permissions,
    permissionSet: new Set(permissions),
    actionsByResource: new Map(resources.map(({ resource, actions }) => [resource, actions])),
    builtInRoles: {
      viewer: granted('viewer'),
      developer: granted('developer'),
      administrator: new Set(permissions),
      api_manager: granted('api_manager'),
    },
  };
}

/** The catalogue; reading it fixes it. */
function current(): Catalogue {
  return (catalogue ??= buildCatalogue());
}

/** Every declared resource with its actions, by resource name. */
export function permissionCatalogue(): readonly CatalogueResource[] {
  return current().resources;
}

/** Every permission, in catalogue order. */
export function allPermissions(): readonly Permission[] {
  return current().permissions;
}

/** Every action some resource has: the columns of a permission matrix. */
export function allActions(): readonly string[] {
  return current().actions;
}

export function builtInRolePermissions(role: BuiltInRoleName): ReadonlySet<Permission> {
  return current().builtInRoles[role];
}

export function isPermission(value: string): value is Permission {
  return current().permissionSet.has(value);
}

/** The actions a resource has, or undefined when no module declares it. */
export function actionsOf(resource: string): readonly string[] | undefined {
  return current().actionsByResource.get(resource);
}

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
