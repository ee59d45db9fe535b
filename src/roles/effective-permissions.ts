import { intersectPermissions, Permission } from './permissions';

/**
 * The one rule for what an API key may do, used by the key check and by every key response:
 * its role's permissions, and for a personal key only those its owner holds too, as the owner is now.
 * An owner who is gone or deactivated leaves a personal key with nothing.
 */
export function effectivePermissions(
  key: { type: string },
  rolePermissions: ReadonlySet<Permission>,
  owner: { active: boolean; permissions: ReadonlySet<Permission> } | null,
): ReadonlySet<Permission> {
  if (key.type !== 'personal') return rolePermissions;
  if (!owner || !owner.active) return new Set<Permission>();
  return intersectPermissions(rolePermissions, owner.permissions);
}
