import { defineIdKind } from '../common/ids';
import { definePermissions } from '../roles/permissions';

/**
 * What the organization-secrets module adds to the shared registries. Only `api_manager` is named:
 * `administrator` holds every action of every resource, and the other built-in roles hold nothing on
 * secrets (a viewer or developer never manages what agents send upstream).
 */
definePermissions('secrets', {
  actions: ['create', 'read', 'update', 'delete'],
  grants: { api_manager: 'all' },
});

/** `sec_…`: one organization secret. */
export const ORGANIZATION_SECRET_ID = defineIdKind('sec');

/** The audit actions OrganizationSecretsModule records (declared on AuditActions when it starts). */
export const ORGANIZATION_SECRET_AUDIT_ACTIONS = [
  'secret.created',
  'secret.updated',
  'secret.deleted',
] as const;
export type OrganizationSecretAuditAction = (typeof ORGANIZATION_SECRET_AUDIT_ACTIONS)[number];
