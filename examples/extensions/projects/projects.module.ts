import { Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditActions } from '../../../src/audit/audit-actions';
import { WebhookEventTypes } from '../../../src/webhooks/webhook-event-types';
import { WebhooksModule } from '../../../src/webhooks/webhooks.module';
import { Project } from './project.entity';
import { PROJECT_AUDIT_ACTIONS, PROJECT_WEBHOOK_EVENTS } from './projects.declarations';
import { ProjectsRepository } from './projects.repository';
import { ProjectsService } from './projects.service';

/**
 * Projects without HTTP: the entity (TypeOrmModule.forFeature registers it with the app's DataSource),
 * the repository and the service. Both processes load it, so worker-side code could use ProjectsService.
 *
 * When it starts it declares what ProjectsService records, as every core module does: its audit actions
 * (AuditActions, from the global AuditModule) and its webhook event type (WebhookEventTypes, exported by
 * WebhooksModule). The audit log's `?action=` filter, webhook subscriptions and the OpenAPI document
 * then know them in this app, and in no app that does not load the extension.
 */
@Module({
  imports: [TypeOrmModule.forFeature([Project]), WebhooksModule],
  providers: [ProjectsRepository, ProjectsService],
  exports: [ProjectsService],
})
export class ProjectsModule implements OnModuleInit {
  constructor(
    private readonly auditActions: AuditActions,
    private readonly webhookEventTypes: WebhookEventTypes,
  ) {}

  onModuleInit(): void {
    this.auditActions.declare(PROJECT_AUDIT_ACTIONS);
    this.webhookEventTypes.declare(PROJECT_WEBHOOK_EVENTS);
  }
}
