/**
 * The audit actions of core modules outside src/audit and src/webhooks, by the module that records
 * them. AuditModule declares them on those modules' behalf (audit.module.ts), through the same
 * `AuditActions.declare` an extension calls; each list belongs in its module's own `onModuleInit`,
 * as WebhooksModule already does with WEBHOOK_AUDIT_ACTIONS (src/webhooks/webhooks.declarations.ts).
 */
export const CORE_AUDIT_ACTIONS = {
  /** ApiKeysModule (its expiry and credit jobs too), SecretScanningModule (`key.leaked`). */
  apiKeys: [
    'key.created',
    'key.updated',
    'key.rotated',
    'key.deleted',
    'key.revoked',
    'key.expiring',
    'key.expired',
    'key.disabled',
    'key.enabled',
    'key.credits_low',
    'key.leaked',
  ],
  identities: ['identity.created', 'identity.updated', 'identity.deleted', 'identity.credits_low'],
  /** AccountsModule: users and teams. */
  accounts: [
    'user.created',
    'user.updated',
    'user.deactivated',
    'user.activated',
    'team.created',
    'team.member_added',
    'team.member_removed',
  ],
  roles: ['role.created', 'role.updated', 'role.deleted'],
  sessions: ['session.signed_in', 'session.signed_out'],
  organizationPolicies: ['organization.policies_updated'],
} as const;

/** What AuditService records itself: a refused use of a key (`recordDenial`). */
export const AUDIT_MODULE_ACTIONS = ['key.denied'] as const;

/** An action a core module records: typed, so a typo in the core is a compile error. */
export type AuditAction =
  | (typeof CORE_AUDIT_ACTIONS)[keyof typeof CORE_AUDIT_ACTIONS][number]
  | (typeof AUDIT_MODULE_ACTIONS)[number];
