import type { Type } from '@nestjs/common';
import {
  IdentityCreatedData,
  IdentityCreditsLowData,
  IdentityDeletedData,
  IdentityUpdatedData,
  KeyCreatedData,
  KeyCreditsLowData,
  KeyDeletedData,
  KeyLeakedData,
  KeyExpiryData,
  KeyRevokedData,
  KeyRotatedData,
  KeySwitchedData,
  TaskEndedData,
  TaskEventData,
  TaskFailedData,
} from '../events/event-payloads.dto';

/**
 * The `data` of each event of the core modules a webhook can subscribe to (API keys, identities, tasks).
 * WebhooksModule declares them on WebhookEventTypes on those modules' behalf, through the same `declare`
 * an extension calls; the OpenAPI `webhooks` section and the `events` a webhook takes are built from
 * the registry, not from this table.
 */
export const CORE_WEBHOOK_EVENT_PAYLOADS = {
  'key.created': KeyCreatedData,
  'key.rotated': KeyRotatedData,
  'key.expiring': KeyExpiryData,
  'key.deleted': KeyDeletedData,
  'key.revoked': KeyRevokedData,
  'key.expired': KeyExpiryData,
  'key.disabled': KeySwitchedData,
  'key.enabled': KeySwitchedData,
  'key.credits_low': KeyCreditsLowData,
  'key.leaked': KeyLeakedData,
  'identity.created': IdentityCreatedData,
  'identity.updated': IdentityUpdatedData,
  'identity.deleted': IdentityDeletedData,
  'identity.credits_low': IdentityCreditsLowData,
  'task.succeeded': TaskEndedData,
  'task.failed': TaskFailedData,
  'task.cancelled': TaskEventData,
} as const satisfies Record<string, Type<unknown>>;

export type WebhookEvent = keyof typeof CORE_WEBHOOK_EVENT_PAYLOADS;

/** The core's event types, in the table's order. */
export const WEBHOOK_EVENTS = Object.keys(CORE_WEBHOOK_EVENT_PAYLOADS) as WebhookEvent[];
