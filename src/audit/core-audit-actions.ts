import type { AccountAuditAction } from '../accounts/accounts.declarations';
import type { ApiKeyAuditAction } from '../api-keys/api-keys.declarations';
import type { IdentityAuditAction } from '../identities/identities.declarations';
import type { OrganizationPolicyAuditAction } from '../organization-policies/organization-policies.declarations';
import type { RoleAuditAction } from '../roles/roles.declarations';
import type { SessionAuditAction } from '../sessions/sessions.declarations';
import type { AUDIT_MODULE_ACTIONS } from './audit.declarations';

/**
 * An action a core module records: typed, so a typo in the core is a compile error. Only the type is
 * left here (audit.service.ts re-exports it); each module declares its actions itself, from its
 * `onModuleInit`, with the lists in its `*.declarations.ts`.
 */
export type AuditAction =
  | ApiKeyAuditAction
  | IdentityAuditAction
  | AccountAuditAction
  | RoleAuditAction
  | SessionAuditAction
  | OrganizationPolicyAuditAction
  | (typeof AUDIT_MODULE_ACTIONS)[number];
