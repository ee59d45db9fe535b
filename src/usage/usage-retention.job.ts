import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { ConfigOf } from '../config/config-namespace';
import { usageConfig } from '../config/namespaces';
import { PeriodicJob } from '../scheduling/periodic-job';
import { DAY_MS, HOUR_MS } from './usage-range';
import { UsageRepository } from './usage.repository';

/**
 * Deletes usage older than USAGE_RETENTION_DAYS, hourly (rows are hourly, so nothing finer is
 * needed). Instances running it at once only delete the same rows; the first one wins.
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
  protected run(): Promise<number> {
    return this.usage.deleteBefore(new Date(this.clock.now() - this.config.retentionDays * DAY_MS));
  }
}
