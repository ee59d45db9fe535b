import { defineIdKind } from '../common/ids';
import { definePermissions } from '../roles/permissions';

/** What the identities module adds to the shared registries: its resource and the ids it issues. */
definePermissions('identities', {
  actions: ['create', 'read', 'update', 'delete'],
  grants: { api_manager: 'all' },
});
export const IDENTITY_ID = defineIdKind('idt');

/** The audit actions IdentitiesModule records (declared on AuditActions when it starts). */
export const IDENTITY_AUDIT_ACTIONS = [
  'identity.created',
  'identity.updated',
  'identity.deleted',
  'identity.credits_low',
] as const;
export type IdentityAuditAction = (typeof IDENTITY_AUDIT_ACTIONS)[number];
