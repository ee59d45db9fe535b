import { Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditActions } from '../../../src/audit/audit-actions';
import { WebhookEventTypes } from '../../../src/webhooks/webhook-event-types';
import { WebhooksModule } from '../../../src/webhooks/webhooks.module';
import { Dataset } from './dataset.entity';
import { DATASET_AUDIT_ACTIONS, DATASET_WEBHOOK_EVENTS } from './datasets.declarations';
import { DatasetsRepository } from './datasets.repository';
import { DatasetsService } from './datasets.service';

/**
 * Datasets without HTTP: the entity (TypeOrmModule.forFeature registers it with the app's DataSource,
 * which loads every registered entity), the repository and the service. Both processes load it, so a
 * worker-side feature (an agent reading a dataset) could use DatasetsService.
 *
 * When it starts it declares what DatasetsService records, as every core module does: its audit actions
 * (AuditActions, from the global AuditModule) and its webhook event type (WebhookEventTypes, exported by
 * WebhooksModule). The audit log's `?action=` filter, webhook subscriptions and the OpenAPI document
 * then know them in this app, and in no app that does not load the extension.
 */
@Module({
  imports: [TypeOrmModule.forFeature([Dataset]), WebhooksModule],
  providers: [DatasetsRepository, DatasetsService],
  exports: [DatasetsService],
})
export class DatasetsModule implements OnModuleInit {
  constructor(
    private readonly auditActions: AuditActions,
    private readonly webhookEventTypes: WebhookEventTypes,
  ) {}

  onModuleInit(): void {
    this.auditActions.declare(DATASET_AUDIT_ACTIONS);
    this.webhookEventTypes.declare(DATASET_WEBHOOK_EVENTS);
  }
}
