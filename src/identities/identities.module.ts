import { Module, OnModuleInit, type Type } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditActions } from '../audit/audit-actions';
import {
  IdentityCreatedData,
  IdentityCreditsLowData,
  IdentityDeletedData,
  IdentityUpdatedData,
} from '../events/event-payloads.dto';
import { WebhookEventTypes } from '../webhooks/webhook-event-types';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { IDENTITY_AUDIT_ACTIONS } from './identities.declarations';
import { Organization } from '../accounts/organization.entity';
import { IdentitiesRepository } from './identities.repository';
import { IdentitiesService } from './identities.service';
import { IdentityBalances } from './identity-balances';
import { IdentityKeys } from './identity-keys';
import { Identity } from './identity.entity';

/** The webhook event types IdentitiesModule emits, with the class of each one's `data`. */
export const IDENTITY_WEBHOOK_EVENTS = {
  'identity.created': IdentityCreatedData,
  'identity.updated': IdentityUpdatedData,
  'identity.deleted': IdentityDeletedData,
  'identity.credits_low': IdentityCreditsLowData,
} as const satisfies Record<string, Type<unknown>>;

/** Identities, the customers behind keys (the api-keys module, above it, attaches keys to them). */
@Module({
  // Organization too: identities.organization_id's foreign key names it, and TypeORM builds a foreign key
  // only to an entity of the same data source (this module does not import AccountsModule).
  imports: [TypeOrmModule.forFeature([Identity, Organization]), WebhooksModule],
  providers: [IdentitiesRepository, IdentitiesService, IdentityKeys, IdentityBalances],
  exports: [IdentitiesService, IdentityKeys, IdentityBalances],
})
export class IdentitiesModule implements OnModuleInit {
  constructor(
    private readonly auditActions: AuditActions,
    private readonly eventTypes: WebhookEventTypes,
  ) {}

  /** The audit actions it records (identities.declarations.ts) and the event types it emits (above). */
  onModuleInit(): void {
    this.auditActions.declare(IDENTITY_AUDIT_ACTIONS);
    this.eventTypes.declare(IDENTITY_WEBHOOK_EVENTS);
  }
}
