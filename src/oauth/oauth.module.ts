import { Module, OnModuleInit } from '@nestjs/common';
import { AuditActions } from '../audit/audit-actions';
import { WebhookEventTypes } from '../webhooks/webhook-event-types';
import { WebhooksModule } from '../webhooks/webhooks.module';
import {
  OAuthClientRegisteredData,
  OAuthGrantCreatedData,
  OAuthGrantRevokedData,
} from './dto/oauth-events.dto';
import { OAuthGrantsController } from './oauth-grants.controller';
import { ClientMetadataDocuments } from './client-metadata-documents';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountsModule } from '../accounts/accounts.module';
import { SessionsModule } from '../sessions/sessions.module';
import { RolesModule } from '../roles/roles.module';
import { OAUTH_AUDIT_ACTIONS } from './oauth.declarations';
import { OAuthGrant } from './oauth-grant.entity';
import { OAuthGrants } from './oauth-grants';
import { OAuthAccounts } from './oauth-accounts';
import { OAuthInteractions } from './oauth-interactions';
import { OAuthTokensController } from './oauth-tokens.controller';
import { OAuthRecord } from './oauth-record.entity';
import { OAuthRecordsRepository } from './oauth-records.repository';
import { OAuthRecordsSweepJob } from './oauth-records-sweep.job';
import { OAuthRoutes } from './oauth-routes';
import { OAuthServer } from './oauth-server';
import { OAuthTokens } from './oauth-tokens';

/** The webhook event types OAuthModule emits, with the class of each one's `data`. */
const OAUTH_WEBHOOK_EVENTS = {
  'oauth.grant_created': OAuthGrantCreatedData,
  'oauth.grant_revoked': OAuthGrantRevokedData,
  'oauth.client_registered': OAuthClientRegisteredData,
};

/**
 * The OAuth 2.1 authorization server (the API only): oidc-provider under /oauth (OAuthServer), the
 * discovery documents, the sign-in and consent pages and introspection. Other modules inject
 * OAuthTokens (an access token to what it stands for: the access layer's) and OAuthGrants (listing and
 * revoking an organization's grants).
 */
@Module({
  imports: [
    TypeOrmModule.forFeature([OAuthRecord, OAuthGrant]),
    SessionsModule,
    AccountsModule,
    RolesModule,
    WebhooksModule,
  ],
  controllers: [OAuthTokensController, OAuthGrantsController],
  providers: [
    OAuthRecordsRepository,
    OAuthAccounts,
    ClientMetadataDocuments,
    OAuthServer,
    OAuthInteractions,
    OAuthRoutes,
    OAuthTokens,
    OAuthGrants,
    OAuthRecordsSweepJob,
  ],
  exports: [OAuthTokens, OAuthGrants],
})
export class OAuthModule implements OnModuleInit {
  constructor(
    private readonly auditActions: AuditActions,
    private readonly eventTypes: WebhookEventTypes,
  ) {}

  /** The audit actions it records and the webhook event types it emits (oauth.declarations.ts). */
  onModuleInit(): void {
    this.auditActions.declare(OAUTH_AUDIT_ACTIONS);
    this.eventTypes.declare(OAUTH_WEBHOOK_EVENTS);
  }
}
