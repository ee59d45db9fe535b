import { defineIdKind } from '../common/ids';
import { definePermissions } from './permissions';

/** What the roles module adds to the shared registries: its resource and the ids it issues. */
definePermissions('roles', { grants: { api_manager: ['read'] } });
export const ROLE_ID = defineIdKind('role');

/**
 * Resources the spec names that no module serves yet. Roles may grant them today, so custom roles and
 * keys made now keep their meaning once a module serves them; that module then takes these over.
 */
definePermissions('workflows', { grants: { viewer: ['read'], developer: 'all', api_manager: ['read'] } });
definePermissions('deployments', {
  grants: { viewer: ['read'], developer: ['read'], api_manager: ['read'] },
});

/** The audit actions RolesModule records (declared on AuditActions when it starts). */
export const ROLE_AUDIT_ACTIONS = ['role.created', 'role.updated', 'role.deleted'] as const;
export type RoleAuditAction = (typeof ROLE_AUDIT_ACTIONS)[number];
