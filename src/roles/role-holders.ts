import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

/** Does anything of a module (users, keys) hold this role? Runs in the caller's transaction. */
export type RoleHolderCheck = (
  manager: EntityManager,
  organizationId: string,
  roleName: string,
) => Promise<boolean>;

/**
 * Who holds a role is known by the modules that assign roles (accounts, api-keys), which sit above
 * roles: they register a check here, so roles reads no table of theirs and a role still held is
 * never deleted.
 */
@Injectable()
export class RoleHolders {
  private readonly checks: RoleHolderCheck[] = [];

  register(check: RoleHolderCheck): void {
    this.checks.push(check);
  }

  async anyHolds(manager: EntityManager, organizationId: string, roleName: string): Promise<boolean> {
    for (const check of this.checks) if (await check(manager, organizationId, roleName)) return true;
    return false;
  }
}
