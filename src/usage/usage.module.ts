import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { KeyIdentityIdsModule } from '../api-keys/key-identity-ids';
import { MetricsModule } from '../metrics/metrics.module';
import { KeyUsageHourly } from './key-usage-hourly.entity';
import { UsageBatch } from './usage-batch.entity';
import { UsageCounter } from './usage-counter';
import { TaskRunMeter } from './task-run-meter';
import { UsageRetentionJob } from './usage-retention.job';
import { UsageRepository } from './usage.repository';

/**
 * Per-key usage without its HTTP side: the counter the key check feeds (AccessModule imports this),
 * the meter of ended task runs (TasksModule), the hourly rollup table and its retention. The endpoints
 * are UsageHttpModule's.
 */
@Module({
  imports: [MetricsModule, KeyIdentityIdsModule, TypeOrmModule.forFeature([KeyUsageHourly, UsageBatch])],
  providers: [UsageCounter, UsageRepository, UsageRetentionJob, TaskRunMeter],
  // The repository for UsageHttpModule, this module's own HTTP side; other modules take the counter or
  // the meter.
  exports: [UsageCounter, TaskRunMeter, UsageRepository],
})
export class UsageModule {}
