import { RolesService } from '../../src/roles/roles.service';
import { builtInRolePermissions } from '../../src/roles/permissions';
import { RolesModule } from '../../src/roles/roles.module';
import { ServiceContext, startFeatureContext } from '../support/feature-context';

describe('RolesService on a real database (no HTTP)', () => {
  let context: ServiceContext;
  beforeAll(async () => {
    context = await startFeatureContext({ imports: [RolesModule] });
  });
  afterAll(() => context.close());

  it('resolves built-in roles without a query and unknown custom roles to undefined', async () => {
    const roles = context.get(RolesService);
    expect(await roles.permissionsOf('org_none', 'viewer')).toBe(builtInRolePermissions('viewer'));
    expect(await roles.permissionsOf('org_none', 'no_such_role')).toBeUndefined();
  });
});
