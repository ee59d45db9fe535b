// The whole permission vocabulary and every id kind, in every process (see core.declarations.ts).
import './core.declarations';
import { ScheduleModule } from '@nestjs/schedule';
import { AuditModule } from './audit/audit.module';
import { CacheInvalidationModule } from './cache-invalidation/cache-invalidation.module';
import { ClockModule } from './common/clock';
import { ShutdownDrainModule } from './common/shutdown-drain';
import type { AppConfig } from './config/app-config';
import { AppConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { type GatehouseExtension, migrationsOf } from './extension';
import { EventsModule } from './events/events.module';
import { LoggingModule } from './logging/logging.module';
import { OutboundModule } from './outbound/outbound.module';
import { RedisModule } from './redis/redis.module';
import { SecretsModule } from './secrets/secrets.module';

/**
 * What every process needs whatever it serves: configuration and secrets, the clock, logs, the database and
 * Redis, scheduled jobs, cache invalidation, the audit log, the event outbox and outbound HTTP.
 * AppModule (the API) and WorkerModule (background work only) both start from this list. The database runs
 * the extensions' migrations with the core's (src/extension.ts); a service test of core modules passes none.
 */
export function platformModules(config: AppConfig, extensions: readonly GatehouseExtension[] = []) {
  return [
    AppConfigModule.forRoot(config),
    SecretsModule,
    ClockModule,
    ShutdownDrainModule,
    LoggingModule,
    ScheduleModule.forRoot(),
    DatabaseModule.forRoot({ extensionMigrations: migrationsOf(extensions) }),
    RedisModule,
    CacheInvalidationModule,
    AuditModule,
    EventsModule,
    OutboundModule,
  ];
}
