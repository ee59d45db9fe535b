import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookDeliveryWorker } from './webhook-delivery.worker';
import { Webhook } from './webhook.entity';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

/** Webhook endpoints and durable, signed delivery of outbox events. */
@Module({
  imports: [TypeOrmModule.forFeature([Webhook, WebhookDelivery])],
  providers: [WebhooksRepository, WebhooksService, WebhookDeliveryWorker],
  exports: [WebhooksService, WebhookDeliveryWorker],
})
export class WebhooksModule {}
