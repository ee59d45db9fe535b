import { RolesService } from '../../src/roles/roles.service';
import { BUILT_IN_ROLES } from '../../src/roles/permissions';
import { startServiceContext, ServiceContext } from '../support/test-app';

describe('RolesService on a real database (no HTTP)', () => {
  let context: ServiceContext;
  beforeAll(async () => {
    context = await startServiceContext();
  });
  afterAll(() => context.close());

  it('resolves built-in roles without a query and unknown custom roles to undefined', async () => {
    const roles = context.get(RolesService);
    expect(await roles.permissionsOf('org_none', 'viewer')).toBe(BUILT_IN_ROLES.viewer);
    expect(await roles.permissionsOf('org_none', 'no_such_role')).toBeUndefined();
  });
});
