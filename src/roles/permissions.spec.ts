import fc from 'fast-check';
// Every core module's declarations (`*.declarations.ts`), as each process loads them.
import '../core.declarations';
import {
  allPermissions,
  builtInRolePermissions,
  definePermissions,
  intersectPermissions,
  isPermission,
  missingPermissions,
  Permission,
  permissionCatalogue,
} from './permissions';

const permissionSet = fc
  .uniqueArray(fc.constantFrom(...allPermissions()))
  .map((list) => new Set<Permission>(list));

/** The contract's resources: what a built-in role holds on them is the contract's to say. */
const CONTRACT_RESOURCES = [
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
];
const STANDARD = ['create', 'delete', 'execute', 'read', 'update'];
const onContractResources = (role: Parameters<typeof builtInRolePermissions>[0]): string[] =>
  [...builtInRolePermissions(role)].filter((p) => CONTRACT_RESOURCES.includes(p.split(':')[0])).sort();
const every = (...resources: string[]) => resources.flatMap((r) => STANDARD.map((a) => `${r}:${a}`));
const read = (...resources: string[]) => resources.map((r) => `${r}:read`);

describe('the permission catalogue the core modules declare', () => {
  it('has every resource the contract names, each with the standard actions at least', () => {
    const catalogue = new Map(permissionCatalogue().map((r) => [r.resource, r.actions]));
    for (const resource of CONTRACT_RESOURCES) {
      expect([...(catalogue.get(resource) ?? [])].sort()).toEqual(expect.arrayContaining(STANDARD));
    }
  });

  it('gives the built-in roles what the contract says', () => {
    expect(onContractResources('viewer')).toEqual(
      read('agents', 'tasks', 'files', 'workflows', 'deployments').sort(),
    );
    expect(onContractResources('developer')).toEqual(
      [...every('agents', 'tasks', 'files', 'workflows'), ...read('deployments')].sort(),
    );
    expect(onContractResources('api_manager')).toEqual(
      [
        ...every('api_keys', 'webhooks'),
        // CONTRACT, "Verifying keys for other services": api_manager checks keys for its services.
        'api_keys:verify',
        ...read('agents', 'tasks', 'files', 'workflows', 'deployments', 'roles', 'audit'),
      ].sort(),
    );
    expect(builtInRolePermissions('administrator')).toEqual(new Set(allPermissions()));
  });

  it('gives identities create, read, update and delete, held by administrator and api_manager only', () => {
    const identities = ['create', 'delete', 'read', 'update'].map((a) => `identities:${a}`);
    const catalogue = new Map(permissionCatalogue().map((r) => [r.resource, r.actions]));
    expect([...(catalogue.get('identities') ?? [])].sort()).toEqual(['create', 'delete', 'read', 'update']);
    const onIdentities = (role: Parameters<typeof builtInRolePermissions>[0]) =>
      [...builtInRolePermissions(role)].filter((p) => p.startsWith('identities:')).sort();
    expect(onIdentities('administrator')).toEqual(identities);
    expect(onIdentities('api_manager')).toEqual(identities);
    expect(onIdentities('developer')).toEqual([]);
    expect(onIdentities('viewer')).toEqual([]);
  });

  it('builds roles only of known permissions', () => {
    for (const role of ['viewer', 'developer', 'administrator', 'api_manager'] as const)
      for (const p of builtInRolePermissions(role)) expect(isPermission(p)).toBe(true);
    expect(isPermission('agents:fly')).toBe(false);
    expect(isPermission('nothing:read')).toBe(false);
  });

  it('refuses a declaration once the catalogue has been read, instead of missing it silently', () => {
    expect(() => definePermissions('late_comer')).toThrow('after the permission catalogue was read');
  });
});

describe('permission algebra', () => {
  it('an intersection never exceeds either side', () => {
    fc.assert(
      fc.property(permissionSet, permissionSet, (a, b) => {
        const both = intersectPermissions(a, b);
        expect(missingPermissions(a, both)).toEqual([]);
        expect(missingPermissions(b, both)).toEqual([]);
      }),
    );
  });

  it('missingPermissions is empty exactly when wanted is a subset of held', () => {
    fc.assert(
      fc.property(permissionSet, permissionSet, (held, wanted) => {
        const subset = [...wanted].every((p) => held.has(p));
        expect(missingPermissions(held, wanted).length === 0).toBe(subset);
      }),
    );
  });
});
