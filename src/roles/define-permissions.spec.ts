import {
  actionsOf,
  allActions,
  builtInRolePermissions,
  definePermissions,
  isPermission,
  permissionCatalogue,
} from './permissions';

/** A registry of its own (jest gives each spec file fresh modules): only what this file declares. */
describe('definePermissions', () => {
  it('declares a resource with its actions and the built-in roles’ grants on it', () => {
    definePermissions('datasets', { grants: { viewer: ['read'], developer: 'all' } });
    definePermissions('reports', { actions: ['read', 'export'], grants: { api_manager: ['export'] } });

    expect(permissionCatalogue()).toEqual([
      { resource: 'datasets', actions: ['create', 'read', 'update', 'delete', 'execute'] },
      { resource: 'reports', actions: ['read', 'export'] },
    ]);
    expect(allActions()).toEqual(['create', 'read', 'update', 'delete', 'execute', 'export']);
    expect([...builtInRolePermissions('viewer')]).toEqual(['datasets:read']);
    expect(builtInRolePermissions('developer').size).toBe(5);
    expect([...builtInRolePermissions('api_manager')]).toEqual(['reports:export']);
    expect(builtInRolePermissions('administrator').size).toBe(7);
    // An action of another resource is not a permission here.
    expect(isPermission('reports:export')).toBe(true);
    expect(isPermission('datasets:export')).toBe(false);
    expect(actionsOf('reports')).toEqual(['read', 'export']);
    expect(actionsOf('nothing')).toBeUndefined();
  });
});

describe('definePermissions refuses what would be ambiguous', () => {
  beforeEach(() => jest.resetModules());

  it('a resource declared twice, a bad name, a grant of an action the resource lacks', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const fresh = require('./permissions') as typeof import('./permissions');
    fresh.definePermissions('datasets');
    expect(() => fresh.definePermissions('datasets')).toThrow('declared twice');
    expect(() => fresh.definePermissions('Data-Sets')).toThrow('must match');
    expect(() => fresh.definePermissions('exports', { actions: ['Read'] })).toThrow('must match');
    expect(() =>
      fresh.definePermissions('logs', { actions: ['read'], grants: { viewer: ['delete'] } }),
    ).toThrow('viewer is granted unknown actions of logs: delete');
  });
});
