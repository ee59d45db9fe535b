import { randomBytes } from 'node:crypto';
import type { Principal } from '../../src/access/principal';
import { OrganizationsService } from '../../src/accounts/organizations.service';
import { BuiltInRoleName, builtInRolePermissions } from '../../src/roles/permissions';
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
    permissions: builtInRolePermissions('administrator'),
  };
}

/** An id of the given prefix in the shape the service issues (prefix, then 22 base62 characters). */
export const testId = (prefix: string): string => `${prefix}_${randomBytes(11).toString('hex')}`;

/**
 * A user of a new organization that has no row. Agents, files, tasks, webhooks, audit and events keep
 * no foreign key to organizations, so their feature contexts need no accounts module for it. The
 * permissions are the role's; the services under test leave checking them to the key check.
 */
export function userOfNewOrganization(role: BuiltInRoleName = 'administrator'): Principal {
  return {
    kind: 'user',
    organizationId: testId('org'),
    userId: testId('usr'),
    apiKeyId: null,
    role,
    permissions: builtInRolePermissions(role),
  };
}
