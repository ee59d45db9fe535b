import { Injectable, type Type } from '@nestjs/common';
import type { OpenAPIObject } from '@nestjs/swagger';
import { CommonError, CommonErrorCode } from '../common/common.errors';
import { DeclaredNames } from '../common/declared-names';
import { describeWebhooks } from '../common/openapi';

/** The OpenAPI component schema this registry fills in (see describeWebhookEventTypes). */
export const WEBHOOK_EVENT_TYPE_SCHEMA = 'WebhookEventType';

/**
 * The event types a webhook endpoint of this app can subscribe to, each with the class of its `data`:
 * the module that records an event of a type (EventsService.record) declares it here from its
 * `onModuleInit`, the core's and an extension's alike (a module that injects it imports WebhooksModule):
 *
 *     constructor(private readonly eventTypes: WebhookEventTypes) {}
 *     onModuleInit() { this.eventTypes.declare({ 'dataset.created': DatasetCreatedData }); }
 *
 * One instance per app, so an app without an extension does not offer the extension's events. What
 * reads it: `events` of POST and PATCH /v1/webhooks (anything else a 400), and the OpenAPI document (the
 * `WebhookEventType` enum and the `webhooks` section, one entry per type with its payload schema).
 */
@Injectable()
export class WebhookEventTypes extends DeclaredNames<Type<unknown>> {
  protected readonly kind = 'webhook event type';

  declare(payloads: Readonly<Record<string, Type<unknown>>>): void {
    this.declareAll(Object.entries(payloads));
  }

  /** The declared types, sorted. */
  types(): string[] {
    return this.names();
  }

  /** Each type's payload class, in the order of `types()`. */
  payloads(): Record<string, Type<unknown>> {
    return Object.fromEntries(this.types().map((type) => [type, this.valueOf(type)!]));
  }

  /**
   * Refuses a subscription to more events than there are or to one nobody declared, with 400
   * validation_failed naming `events` (the DTO has checked that it is a list of at least one).
   */
  assertSubscribable(events: readonly unknown[] | undefined): void {
    if (events === undefined) return;
    const types = this.types();
    const messages: string[] = [];
    if (events.length > types.length)
      messages.push(`events must contain no more than ${types.length} elements`);
    if (!events.every((event) => typeof event === 'string' && this.has(event))) {
      messages.push(`each event must be one of ${types.join(', ')}`);
    }
    if (!messages.length) return;
    throw new CommonError(CommonErrorCode.ValidationFailed, messages.join('; '), {
      errors: messages.map((message) => ({ field: 'events', message })),
    });
  }
}

/**
 * Writes this app's event types into the OpenAPI document: the `WebhookEventType` enum (what `events`
 * takes) and the `webhooks` section. The payload classes must be among the document's models
 * (`extraModels: Object.values(types.payloads())`).
 */
export function describeWebhookEventTypes(document: OpenAPIObject, types: WebhookEventTypes): OpenAPIObject {
  const schemas = document.components?.schemas ?? {};
  if (!schemas[WEBHOOK_EVENT_TYPE_SCHEMA]) {
    throw new Error(`OpenAPI: no schema ${WEBHOOK_EVENT_TYPE_SCHEMA} to enumerate`);
  }
  schemas[WEBHOOK_EVENT_TYPE_SCHEMA] = { ...schemas[WEBHOOK_EVENT_TYPE_SCHEMA], enum: types.types() };
  return describeWebhooks(document, types.payloads());
}
