import type { Principal } from '../../src/access/principal';
import { OrganizationsService } from '../../src/accounts/organizations.service';
import { BUILT_IN_ROLES } from '../../src/roles/permissions';
import type { ServiceContext } from './test-app';

/** Medium specs: a new organization with its administrator, as the Principal its requests would carry. */
export async function administratorOf(
  context: Pick<ServiceContext, 'get'>,
  label: string,
): Promise<Principal> {
  const { organization, user } = await context.get(OrganizationsService).createWithAdministrator({
    organizationName: label,
    email: `${label.toLowerCase()}-${Date.now()}@example.test`,
    password: 'a-long-enough-password',
    name: 'Admin',
  });
  return {
    kind: 'user',
    organizationId: organization.id,
    userId: user.id,
    apiKeyId: null,
    role: 'administrator',
    permissions: BUILT_IN_ROLES.administrator,
  };
}
