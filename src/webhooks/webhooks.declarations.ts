import { defineIdKind } from '../common/ids';
import { definePermissions } from '../roles/permissions';

/** What the webhooks module adds to the shared registries: its resource and the ids it issues. */
definePermissions('webhooks', { grants: { api_manager: 'all' } });
export const WEBHOOK_ID = defineIdKind('whk');
export const DELIVERY_ID = defineIdKind('dlv');

/** The audit actions WebhooksModule records (declared on AuditActions when it starts). */
export const WEBHOOK_AUDIT_ACTIONS = [
  'webhook.created',
  'webhook.updated',
  'webhook.secret_rotated',
  'webhook.deleted',
  'webhook.disabled',
] as const;
export type WebhookAuditAction = (typeof WEBHOOK_AUDIT_ACTIONS)[number];
