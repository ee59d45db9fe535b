import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MetricsModule } from '../metrics/metrics.module';
import { KeyUsageHourly } from './key-usage-hourly.entity';
import { UsageBatch } from './usage-batch.entity';
import { UsageCounter } from './usage-counter';
import { UsageRetentionJob } from './usage-retention.job';
import { UsageRepository } from './usage.repository';

/**
 * Per-key usage without its HTTP side: the counter the key check feeds (AccessModule imports this),
 * the hourly rollup table and its retention. The endpoints are UsageHttpModule's.
 */
@Module({
  imports: [MetricsModule, TypeOrmModule.forFeature([KeyUsageHourly, UsageBatch])],
  providers: [UsageCounter, UsageRepository, UsageRetentionJob],
  exports: [UsageCounter, UsageRepository],
})
export class UsageModule {}
