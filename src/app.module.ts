import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { AccountsModule } from './accounts/accounts.module';
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
import { HealthModule } from './health/health.module';
import { LoggingModule } from './logging/logging.module';
import { MetricsModule } from './metrics/metrics.module';
import { RedisModule } from './redis/redis.module';
import { RolesGuard } from './roles/roles.guard';
import { RolesModule } from './roles/roles.module';

/**
 * The root module. Global guards run in the order listed here:
 * credential (ApiKeyGuard) -> permission (RolesGuard).
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
        RolesModule,
        AccountsModule,
        ApiKeysModule,
        AuthModule,
        HealthModule,
        MetricsModule,
      ],
      providers: [
        { provide: APP_GUARD, useExisting: ApiKeyGuard },
        { provide: APP_GUARD, useExisting: RolesGuard },
        { provide: APP_PIPE, useFactory: createValidationPipe },
        { provide: APP_FILTER, useClass: ProblemFilter },
      ],
    };
  }
}
