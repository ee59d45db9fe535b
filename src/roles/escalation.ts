import type { Principal } from '../auth/principal';
import { forbidden } from '../common/problem';
import { missingPermissions, Permission } from './permissions';

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
    throw forbidden(
      'privilege_escalation',
      `${subject} would hold permissions the caller lacks: ${missing.sort().join(', ')}.`,
    );
  }
}
