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
import { WEBHOOK_EVENTS } from './webhook.entity';

export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/**
 * The `data` of each event a webhook can subscribe to. `satisfies` makes an event without a payload
 * type a compile error; the OpenAPI `webhooks` section is built from this table.
 */
export const WEBHOOK_EVENT_PAYLOADS = {
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
} as const satisfies Record<WebhookEvent, Type<unknown>>;
