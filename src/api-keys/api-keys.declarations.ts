import { defineIdKind } from '../common/ids';
import { definePermissions, STANDARD_ACTIONS } from '../roles/permissions';

/** What the API-keys module adds to the shared registries: its resource and the ids it issues. */
// `verify`: checking another key's value for one's own services (POST /v1/keys/verify).
definePermissions('api_keys', { actions: [...STANDARD_ACTIONS, 'verify'], grants: { api_manager: 'all' } });
export const API_KEY_ID = defineIdKind('key');

/**
 * The audit actions ApiKeysModule records (declared on AuditActions when it starts): its endpoints, its
 * expiry and credit jobs, and `key.leaked`, which KeyLeaks records for a secret-scanning report.
 */
export const API_KEY_AUDIT_ACTIONS = [
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
] as const;
export type ApiKeyAuditAction = (typeof API_KEY_AUDIT_ACTIONS)[number];
