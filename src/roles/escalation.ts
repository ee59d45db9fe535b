import type { Principal } from '../access/principal';
import { missingPermissions, Permission } from './permissions';
import { RoleError, RoleErrorCode } from './roles.errors';

/**
 * The no-escalation rule in one place: a credential may only grant, or act upon, permissions it holds
 * itself. Used for keys, users and roles alike.
 */
export function assertWithinPrincipal(
  principal: Principal,
  wanted: Iterable<Permission>,
  subject: string,
): void {
  const missing = missingPermissions(principal.permissions, wanted);
  if (missing.length) {
    throw new RoleError(
      RoleErrorCode.PrivilegeEscalation,
      `${subject} would hold permissions the caller lacks: ${missing.sort().join(', ')}.`,
    );
  }
}
