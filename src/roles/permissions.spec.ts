import fc from 'fast-check';
import {
  ALL_PERMISSIONS,
  BUILT_IN_ROLES,
  intersectPermissions,
  isPermission,
  missingPermissions,
  Permission,
} from './permissions';

const permissionSet = fc
  .uniqueArray(fc.constantFrom(...ALL_PERMISSIONS))
  .map((list) => new Set<Permission>(list));

describe('built-in roles', () => {
  it('match the contract', () => {
    expect([...BUILT_IN_ROLES.viewer].sort()).toEqual([
      'agents:read',
      'deployments:read',
      'files:read',
      'tasks:read',
      'workflows:read',
    ]);
    expect(BUILT_IN_ROLES.developer.has('agents:execute')).toBe(true);
    expect(BUILT_IN_ROLES.developer.has('deployments:create')).toBe(false);
    expect(BUILT_IN_ROLES.developer.has('users:read')).toBe(false);
    expect(BUILT_IN_ROLES.administrator.size).toBe(ALL_PERMISSIONS.length);
    expect(BUILT_IN_ROLES.api_manager.has('api_keys:delete')).toBe(true);
    expect(BUILT_IN_ROLES.api_manager.has('webhooks:create')).toBe(true);
    expect(BUILT_IN_ROLES.api_manager.has('audit:read')).toBe(true);
    expect(BUILT_IN_ROLES.api_manager.has('users:read')).toBe(false);
    expect(BUILT_IN_ROLES.api_manager.has('teams:read')).toBe(false);
    expect(BUILT_IN_ROLES.api_manager.has('agents:create')).toBe(false);
  });

  it('are all made of known permissions', () => {
    for (const role of Object.values(BUILT_IN_ROLES))
      for (const p of role) expect(isPermission(p)).toBe(true);
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
