import { Injectable } from '@nestjs/common';
import { UsersService } from '../accounts/users.service';
import { effectivePermissions } from '../roles/effective-permissions';
import type { Permission } from '../roles/permissions';
import { RolesService } from '../roles/roles.service';
import type { ApiKey } from './api-key.entity';

export interface KeyGrant {
  /** What the key may do now (roles/effective-permissions.ts). */
  permissions: ReadonlySet<Permission>;
  /** For a personal key: whether its owner is active (a gone owner counts as inactive). */
  ownerActive: boolean | null;
}

/**
 * The effective permissions of keys, as the key check and every key response see them, read through
 * the roles and accounts services (this module reads none of their tables).
 */
@Injectable()
export class KeyPermissions {
  constructor(
    private readonly roles: RolesService,
    private readonly users: UsersService,
  ) {}

  async of(keys: ApiKey[]): Promise<KeyGrant[]> {
    const rolePermissions = new Map<string, Promise<ReadonlySet<Permission>>>();
    const roleOf = (organizationId: string, role: string): Promise<ReadonlySet<Permission>> => {
      const id = `${organizationId}:${role}`;
      let permissions = rolePermissions.get(id);
      if (!permissions) {
        permissions = this.roles.permissionsOf(organizationId, role).then((p) => p ?? new Set<Permission>());
        rolePermissions.set(id, permissions);
      }
      return permissions;
    };
    const owners = await this.users.ownerStates(
      keys.flatMap((key) => (key.type === 'personal' && key.ownerId ? [key.ownerId] : [])),
    );
    return Promise.all(
      keys.map(async (key): Promise<KeyGrant> => {
        const granted = await roleOf(key.organizationId, key.role);
        if (key.type !== 'personal') return { permissions: granted, ownerActive: null };
        const owner = key.ownerId ? owners.get(key.ownerId) : undefined;
        const ownerGrant = owner
          ? { active: owner.active, permissions: await roleOf(owner.organizationId, owner.role) }
          : null;
        return {
          permissions: effectivePermissions(key, granted, ownerGrant),
          ownerActive: owner?.active ?? false,
        };
      }),
    );
  }
}
