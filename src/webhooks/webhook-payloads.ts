import { API_KEY_WEBHOOK_EVENTS } from '../api-keys/api-keys.module';
import { IDENTITY_WEBHOOK_EVENTS } from '../identities/identities.module';
import { TASK_WEBHOOK_EVENTS } from '../tasks/tasks.module';

/**
 * The event types of the core modules (API keys, identities, tasks), for what needs the core's list
 * without an app (the specs). Each module declares its own on WebhookEventTypes from its `onModuleInit`;
 * the OpenAPI `webhooks` section and the `events` a webhook takes are built from that registry, not
 * from this list.
 */
const CORE_WEBHOOK_EVENT_PAYLOADS = {
  ...API_KEY_WEBHOOK_EVENTS,
  ...IDENTITY_WEBHOOK_EVENTS,
  ...TASK_WEBHOOK_EVENTS,
};

export type WebhookEvent = keyof typeof CORE_WEBHOOK_EVENT_PAYLOADS;

/** The core's event types, by module. */
export const WEBHOOK_EVENTS = Object.keys(CORE_WEBHOOK_EVENT_PAYLOADS) as WebhookEvent[];
