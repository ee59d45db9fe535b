import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { ConfigOf } from '../config/config-namespace';
import { usageConfig } from '../config/namespaces';
import { PeriodicJob } from '../scheduling/periodic-job';
import { DAY_MS, HOUR_MS } from './usage-range';
import { UsageRepository } from './usage.repository';

/**
 * Deletes usage older than USAGE_RETENTION_DAYS, and the ids of usage batches added more than a day
 * ago, hourly (rows are hourly, so nothing finer is needed). Instances running it at once only delete the same rows; the first one wins.
 */
@Injectable()
export class UsageRetentionJob extends PeriodicJob {
  protected readonly jobName = 'usage-retention';

  constructor(
    @Inject(usageConfig.KEY) private readonly config: ConfigOf<typeof usageConfig>,
    private readonly clock: Clock,
    private readonly usage: UsageRepository,
  ) {
    super();
  }

  protected intervalMs(): number {
    return HOUR_MS;
  }

  /** Returns how many hourly rows were deleted. */
  protected async run(): Promise<number> {
    const now = this.clock.now();
    // Batch ids only guard retries, which come within seconds of the first try.
    await this.usage.forgetBatchesBefore(new Date(now - DAY_MS));
    return this.usage.deleteBefore(new Date(now - this.config.retentionDays * DAY_MS));
  }
}
