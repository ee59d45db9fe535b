import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '../access/principal';
import { actorOf, AuditService, RequestOrigin } from '../audit/audit.service';
import type { RoleAuditAction } from './roles.declarations';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { newId } from '../common/ids';
import { ROLE_ID } from './roles.declarations';
import { ListQueryDto } from '../common/pagination';
import { isUniqueViolation } from '../database/database-errors';
import { CustomRole } from './custom-role.entity';
import {
  CreateRoleDto,
  mapFromPermissions,
  permissionsFromMap,
  RolePage,
  RoleResponse,
  UpdateRoleDto,
} from './dto/role.dto';
import { assertWithinPrincipal } from './escalation';
import {
  BUILT_IN_ROLE_NAMES,
  builtInRolePermissions,
  isBuiltInRole,
  isPermission,
  Permission,
} from './permissions';
import { RoleError, RoleErrorCode } from './roles.errors';
import { RoleHolders } from './role-holders';
import { RolesRepository } from './roles.repository';

/**
 * Roles by name within an organization: the four built-in ones (constants) and the organization's
 * custom roles (rows). Users and keys hold a role by name; this resolves the name to permissions.
 */
@Injectable()
export class RolesService {
  constructor(
    private readonly customRoles: RolesRepository,
    private readonly holders: RoleHolders,
    private readonly invalidations: InvalidationBus,
    private readonly audit: AuditService,
  ) {}

  async permissionsOf(
    organizationId: string,
    roleName: string,
  ): Promise<ReadonlySet<Permission> | undefined> {
    if (isBuiltInRole(roleName)) return builtInRolePermissions(roleName);
    const role = await this.customRoles.findByName(organizationId, roleName);
    return role ? grantedBy(role) : undefined;
  }

  /** Permissions a role grants in the organization, or 400 `unknown_role` when it does not exist there. */
  async requireRole(organizationId: string, roleName: string): Promise<ReadonlySet<Permission>> {
    const permissions = await this.permissionsOf(organizationId, roleName);
    if (!permissions) {
      throw new RoleError(RoleErrorCode.UnknownRole, `The role "${roleName}" does not exist.`, {
        errors: [{ field: 'role', message: `role "${roleName}" does not exist` }],
      });
    }
    return permissions;
  }

  async create(principal: Principal, dto: CreateRoleDto, origin: RequestOrigin): Promise<RoleResponse> {
    if (isBuiltInRole(dto.role_name)) {
      throw new RoleError(RoleErrorCode.RoleNameTaken, `"${dto.role_name}" is a built-in role.`);
    }
    const permissions = permissionsFromMap(dto.permissions);
    assertWithinPrincipal(principal, permissions, 'The role');
    try {
      const role = await this.customRoles.transaction(async (manager) => {
        const row = await this.customRoles.insert(manager, {
          id: newId(ROLE_ID),
          organizationId: principal.organizationId,
          roleName: dto.role_name,
          permissions,
        });
        await this.record(manager, principal, origin, row, 'role.created');
        return row;
      });
      return customRoleResponse(role);
    } catch (error) {
      if (isUniqueViolation(error, 'custom_roles_organization_name_key')) {
        throw new RoleError(RoleErrorCode.RoleNameTaken, `A role named "${dto.role_name}" already exists.`);
      }
      throw error;
    }
  }

  /** Built-in roles head the first page; custom roles follow, newest first, cursor-paginated. */
  async list(principal: Principal, query: ListQueryDto): Promise<RolePage> {
    const page = await this.customRoles.page(principal.organizationId, query);
    const builtIns = query.cursor ? [] : BUILT_IN_ROLE_NAMES.map(builtInRoleResponse);
    return { data: [...builtIns, ...page.data.map(customRoleResponse)], next_cursor: page.next_cursor };
  }

  async get(principal: Principal, roleName: string): Promise<RoleResponse> {
    if (isBuiltInRole(roleName)) return builtInRoleResponse(roleName);
    return customRoleResponse(await this.getCustom(principal, roleName));
  }

  /** Changing a role changes every user and key holding it; caches are told at once. */
  async update(
    principal: Principal,
    roleName: string,
    dto: UpdateRoleDto,
    origin: RequestOrigin,
  ): Promise<RoleResponse> {
    const role = await this.getCustom(principal, roleName);
    const permissions = permissionsFromMap(dto.permissions);
    // Neither the old nor the new permission set may exceed the caller's: no editing a stronger role.
    assertWithinPrincipal(principal, [...grantedBy(role), ...permissions], 'The role');
    const previous = [...grantedBy(role)].sort();
    role.permissions = permissions;
    const saved = await this.customRoles.transaction(async (manager) => {
      const row = await this.customRoles.save(manager, role);
      await this.record(manager, principal, origin, row, 'role.updated', { previous_permissions: previous });
      return row;
    });
    this.invalidations.publish({ kind: 'organization', organizationId: principal.organizationId });
    return customRoleResponse(saved);
  }

  async delete(principal: Principal, roleName: string, origin: RequestOrigin): Promise<void> {
    const role = await this.getCustom(principal, roleName);
    assertWithinPrincipal(principal, grantedBy(role), 'The role');
    await this.customRoles.transaction(async (manager) => {
      // Holders are asked inside the transaction, under a lock on the role row, so a concurrent
      // assignment cannot slip in between the check and the delete.
      await this.customRoles.lock(manager, role.id);
      if (await this.holders.anyHolds(manager, principal.organizationId, role.roleName))
        throw new RoleError(
          RoleErrorCode.RoleInUse,
          `The role "${role.roleName}" is still held by a user or a key.`,
        );
      await this.customRoles.delete(manager, role.id);
      await this.record(manager, principal, origin, role, 'role.deleted');
    });
    this.invalidations.publish({ kind: 'organization', organizationId: principal.organizationId });
  }

  /** The audit entry of a change to a custom role, in the change's transaction, with what it grants. */
  private record(
    manager: EntityManager,
    principal: Principal,
    origin: RequestOrigin,
    role: CustomRole,
    action: RoleAuditAction,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    return this.audit.append(manager, [
      {
        organizationId: role.organizationId,
        action,
        actor: actorOf(principal),
        origin,
        details: {
          role_id: role.id,
          role_name: role.roleName,
          permissions: [...grantedBy(role)].sort(),
          ...details,
        },
      },
    ]);
  }

  private async getCustom(principal: Principal, roleName: string): Promise<CustomRole> {
    if (isBuiltInRole(roleName))
      throw new RoleError(RoleErrorCode.BuiltInRole, 'Built-in roles cannot be changed.');
    const role = await this.customRoles.findByName(principal.organizationId, roleName);
    if (!role) throw new RoleError(RoleErrorCode.NotFound, 'The role was not found.');
    return role;
  }
}

function builtInRoleResponse(name: (typeof BUILT_IN_ROLE_NAMES)[number]): RoleResponse {
  return {
    id: null,
    role_name: name,
    permissions: mapFromPermissions(builtInRolePermissions(name)),
    built_in: true,
    created_at: null,
    updated_at: null,
  };
}

function customRoleResponse(role: CustomRole): RoleResponse {
  return {
    id: role.id,
    role_name: role.roleName,
    permissions: mapFromPermissions(grantedBy(role)),
    built_in: false,
    created_at: role.createdAt.toISOString(),
    updated_at: role.updatedAt.toISOString(),
  };
}

/**
 * What a custom role grants: its stored permissions that a module still declares. A role written while
 * an extension was loaded keeps its row when the extension goes, but grants nothing on what is gone
 * (deny by default), and does not stop an administrator from editing it.
 */
function grantedBy(role: CustomRole): Set<Permission> {
  return new Set(role.permissions.filter(isPermission));
}
