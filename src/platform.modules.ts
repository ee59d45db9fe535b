import { ScheduleModule } from '@nestjs/schedule';
import { AuditModule } from './audit/audit.module';
import { CacheInvalidationModule } from './cache-invalidation/cache-invalidation.module';
import { ClockModule } from './common/clock';
import type { AppConfig } from './config/app-config';
import { AppConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { EventsModule } from './events/events.module';
import { LoggingModule } from './logging/logging.module';
import { OutboundModule } from './outbound/outbound.module';
import { RedisModule } from './redis/redis.module';
import { SecretsModule } from './secrets/secrets.module';

/**
 * What every process needs whatever it serves: configuration and secrets, the clock, logs, the database and
 * Redis, scheduled jobs, cache invalidation, the audit log, the event outbox and outbound HTTP.
 * AppModule (the API) and WorkerModule (background work only) both start from this list.
 */
export function platformModules(config: AppConfig) {
  return [
    AppConfigModule.forRoot(config),
    SecretsModule,
    ClockModule,
    LoggingModule,
    ScheduleModule.forRoot(),
    DatabaseModule.forRoot(),
    RedisModule,
    CacheInvalidationModule,
    AuditModule,
    EventsModule,
    OutboundModule,
  ];
}
