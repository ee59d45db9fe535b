import { Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditActions } from '../audit/audit-actions';
import { DeliveryTargets } from './delivery-targets';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookDeliveryWorker } from './webhook-delivery.worker';
import { WebhookEventTypes } from './webhook-event-types';
import { Webhook } from './webhook.entity';
import { WEBHOOK_AUDIT_ACTIONS } from './webhooks.declarations';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

/**
 * Webhook endpoints and durable, signed delivery of outbox events, and the registry of the event types
 * an endpoint can subscribe to (WebhookEventTypes): a module that records events imports this one to
 * declare them. Other kinds of delivery register with DeliveryTargets (A2A's push notifications).
 */
@Module({
  imports: [TypeOrmModule.forFeature([Webhook, WebhookDelivery])],
  providers: [WebhooksRepository, WebhooksService, WebhookDeliveryWorker, WebhookEventTypes, DeliveryTargets],
  exports: [WebhooksService, WebhookDeliveryWorker, WebhookEventTypes, DeliveryTargets],
})
export class WebhooksModule implements OnModuleInit {
  constructor(
    private readonly auditActions: AuditActions,
    private readonly eventTypes: WebhookEventTypes,
  ) {}

  /** The audit actions it records; the event types are declared by the modules that emit them. */
  onModuleInit(): void {
    this.auditActions.declare(WEBHOOK_AUDIT_ACTIONS);
  }
}
