import { Module, OnModuleInit, type Type } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditActions } from '../audit/audit-actions';
import {
  KeyCreatedData,
  KeyCreditsLowData,
  KeyDeletedData,
  KeyExpiryData,
  KeyLeakedData,
  KeyRevokedData,
  KeyRotatedData,
  KeySwitchedData,
} from '../events/event-payloads.dto';
import { WebhookEventTypes } from '../webhooks/webhook-event-types';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { API_KEY_AUDIT_ACTIONS } from './api-keys.declarations';
import { AccountsModule } from '../accounts/accounts.module';
import { IdentitiesModule } from '../identities/identities.module';
import { RolesModule } from '../roles/roles.module';
import { ApiKey } from './api-key.entity';
import { ApiKeyLeak } from './api-key-leak.entity';
import { KeyLeaks } from './key-leaks';
import { LeakReportQueueJob } from './leak-report-queue.job';
import { PendingLeakReport } from './pending-leak-report.entity';
import { PendingLeakReportsRepository } from './pending-leak-reports.repository';
import { OrganizationPoliciesModule } from '../organization-policies/organization-policies.module';
import { ApiKeyValues } from './api-key-format';
import { ApiKeysRepository } from './api-keys.repository';
import { KeyPermissions } from './key-permissions';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeyLifecycleService } from './api-key-lifecycle.service';
import { ApiKeyQueryService } from './api-key-query.service';
import { ApiKeyRotationService } from './api-key-rotation.service';
import { ApiKeysRegistrar } from './api-keys.registrar';
import { KeySettingChecks } from './key-setting-checks';
import { PersonalKeyRevocation } from './personal-key-revocation';
import { KeyChangeRecorder } from './key-change-recorder';
import { KeyExpiryJob } from './key-expiry.job';
import { KeyLookup } from './key-lookup';
import { KeyRotationJob } from './key-rotation.job';
import { KeyUsageRecorder } from './key-usage-recorder';
import { VerifyController } from './verify.controller';
import { RedisConnection } from '../redis/redis.connection';
import { CreditLedger } from './credits/credit-ledger';
import { CreditRefillJob } from './credits/credit-refill.job';
import { CreditsService } from './credits/credits.service';
import { CreditTables } from './credits/credit-tables';
import { PostgresCreditLedger } from './credits/postgres-credit-ledger';
import { RedisCreditLedger } from './credits/redis-credit-ledger';

/** The webhook event types ApiKeysModule emits, with the class of each one's `data`. */
export const API_KEY_WEBHOOK_EVENTS = {
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
} as const satisfies Record<string, Type<unknown>>;

/**
 * API keys: lifecycle endpoints, verification, key values, their last use, their credits, and what a
 * leak report does to them (KeyLeaks).
 */
@Module({
  imports: [
    TypeOrmModule.forFeature([ApiKey, ApiKeyLeak, PendingLeakReport]),
    AccountsModule,
    RolesModule,
    IdentitiesModule,
    OrganizationPoliciesModule,
    WebhooksModule,
  ],
  controllers: [VerifyController, ApiKeysController],
  providers: [
    ApiKeyQueryService,
    ApiKeyLifecycleService,
    ApiKeyRotationService,
    KeySettingChecks,
    PersonalKeyRevocation,
    ApiKeysRegistrar,
    ApiKeyValues,
    ApiKeysRepository,
    KeyLookup,
    KeyPermissions,
    KeyUsageRecorder,
    KeyChangeRecorder,
    KeyLeaks,
    PendingLeakReportsRepository,
    LeakReportQueueJob,
    KeyExpiryJob,
    KeyRotationJob,
    {
      // Credits are spent in Redis when every instance shares one, else in the database.
      provide: CreditLedger,
      inject: [RedisConnection, CreditTables],
      useFactory: (redis: RedisConnection, tables: CreditTables) =>
        redis.isConfigured() ? new RedisCreditLedger(redis, tables) : new PostgresCreditLedger(tables),
    },
    CreditTables,
    CreditsService,
    CreditRefillJob,
  ],
  exports: [
    ApiKeyValues,
    ApiKeyQueryService,
    KeyLookup,
    KeyPermissions,
    KeyUsageRecorder,
    CreditsService,
    KeyLeaks,
    LeakReportQueueJob,
  ],
})
export class ApiKeysModule implements OnModuleInit {
  constructor(
    private readonly auditActions: AuditActions,
    private readonly eventTypes: WebhookEventTypes,
  ) {}

  /** The audit actions it records (api-keys.declarations.ts) and the event types it emits (above). */
  onModuleInit(): void {
    this.auditActions.declare(API_KEY_AUDIT_ACTIONS);
    this.eventTypes.declare(API_KEY_WEBHOOK_EVENTS);
  }
}
