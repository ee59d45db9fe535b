import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { AccountsModule } from './accounts/accounts.module';
import { AgentsModule } from './agents/agents.module';
import { FilesModule } from './files/files.module';
import { OutboundModule } from './outbound/outbound.module';
import { TasksModule } from './tasks/tasks.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { ApiKeysModule } from './api-keys/api-keys.module';
import { AuditModule } from './audit/audit.module';
import { CacheInvalidationModule } from './cache-invalidation/cache-invalidation.module';
import { ApiKeyGuard } from './auth/api-key.guard';
import { AuthModule } from './auth/auth.module';
import { ProblemFilter } from './common/problem.filter';
import { createValidationPipe } from './common/validation';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { EventsModule } from './events/events.module';
import { HealthModule } from './health/health.module';
import { LoggingModule } from './logging/logging.module';
import { MetricsModule } from './metrics/metrics.module';
import { ConcurrencyGuard } from './rate-limits/concurrency.guard';
import { KeyThrottlerGuard } from './rate-limits/key-throttler.guard';
import { RateLimitsModule } from './rate-limits/rate-limits.module';
import { RedisModule } from './redis/redis.module';
import { RestrictionsGuard } from './restrictions/restrictions.guard';
import { RestrictionsModule } from './restrictions/restrictions.module';
import { RolesGuard } from './roles/roles.guard';
import { RolesModule } from './roles/roles.module';
import { RouteIndexer } from './common/route-index';

/**
 * The root module. Global guards run in the order listed here, the contract's order of checks:
 * credential (ApiKeyGuard) -> restrictions (RestrictionsGuard) -> permission (RolesGuard)
 * -> rate limit (KeyThrottlerGuard) -> concurrency (ConcurrencyGuard).
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule,
        DatabaseModule.forRoot(),
        RedisModule,
        CacheInvalidationModule,
        AuditModule,
        EventsModule,
        RolesModule,
        AccountsModule,
        ApiKeysModule,
        AuthModule,
        RestrictionsModule,
        RateLimitsModule,
        OutboundModule,
        FilesModule,
        AgentsModule,
        TasksModule,
        WebhooksModule,
        HealthModule,
        MetricsModule,
      ],
      providers: [
        { provide: APP_GUARD, useExisting: ApiKeyGuard },
        { provide: APP_GUARD, useExisting: RestrictionsGuard },
        { provide: APP_GUARD, useExisting: RolesGuard },
        { provide: APP_GUARD, useExisting: KeyThrottlerGuard },
        { provide: APP_GUARD, useExisting: ConcurrencyGuard },
        { provide: APP_PIPE, useFactory: createValidationPipe },
        { provide: APP_FILTER, useClass: ProblemFilter },
        RouteIndexer,
      ],
    };
  }
}
