import { DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { AccessModule } from './access/access.module';
import { AccountsModule } from './accounts/accounts.module';
import { AgentsModule } from './agents/agents.module';
import { FilesModule } from './files/files.module';
import { OutboundModule } from './outbound/outbound.module';
import { TasksModule } from './tasks/tasks.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { ApiKeysModule } from './api-keys/api-keys.module';
import { AuditModule } from './audit/audit.module';
import { CacheInvalidationModule } from './cache-invalidation/cache-invalidation.module';
import { AuthModule } from './auth/auth.module';
import { ProblemFilter } from './common/problem.filter';
import { createValidationPipe } from './common/validation';
import { AppConfig } from './config/app-config';
import { AppConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { EventsModule } from './events/events.module';
import { HealthModule } from './health/health.module';
import { LoggingModule } from './logging/logging.module';
import { MetricsModule } from './metrics/metrics.module';
import { RedisModule } from './redis/redis.module';
import { RolesModule } from './roles/roles.module';
import { SecretsModule } from './secrets/secrets.module';

/**
 * The root module: platform modules, features, and the key check (AccessModule, which registers the
 * global guards in the order src/access/access-check.ts declares).
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(config),
        SecretsModule,
        LoggingModule,
        ScheduleModule.forRoot(),
        DatabaseModule.forRoot(),
        RedisModule,
        CacheInvalidationModule,
        AuditModule,
        EventsModule,
        RolesModule,
        AccountsModule,
        ApiKeysModule,
        AuthModule,
        OutboundModule,
        FilesModule,
        AgentsModule,
        TasksModule,
        WebhooksModule,
        HealthModule,
        MetricsModule,
        AccessModule,
      ],
      providers: [
        { provide: APP_PIPE, useFactory: createValidationPipe },
        { provide: APP_FILTER, useClass: ProblemFilter },
      ],
    };
  }
}
