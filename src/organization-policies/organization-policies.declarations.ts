import { definePermissions } from '../roles/permissions';

/**
 * What the organization-policies module adds to the shared registries: the `organization` resource
 * (its settings, read and changed as a whole). Administrators hold it; `api_manager` reads it, as it
 * reads everything but users and teams, so whoever makes keys can see the rules they must follow.
 */
definePermissions('organization', { actions: ['read', 'update'], grants: { api_manager: ['read'] } });

/** The audit action OrganizationPoliciesModule records (declared on AuditActions when it starts). */
export const ORGANIZATION_POLICY_AUDIT_ACTIONS = ['organization.policies_updated'] as const;
export type OrganizationPolicyAuditAction = (typeof ORGANIZATION_POLICY_AUDIT_ACTIONS)[number];
