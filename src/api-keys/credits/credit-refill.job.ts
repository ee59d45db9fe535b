import { Injectable } from '@nestjs/common';
import { Clock } from '../../common/clock';
import { PeriodicJob } from '../../scheduling/periodic-job';
import { IdentitiesService } from '../../identities/identities.service';
import { ApiKeysRepository } from '../api-keys.repository';
import { CreditsService } from './credits.service';
import { refillBoundaryAtOrBefore } from './refill-schedule';

const SCAN_INTERVAL_MS = 60_000;
const SCAN_BATCH = 500;

/**
 * Refills balances (keys' and identities') at their boundary even when nobody spends them, so the key object and the
 * webhooks show the refill on time. A key in use is refilled by its first request after the boundary
 * (CreditsService.spend); both go through one conditional UPDATE, so a boundary refills once.
 */
@Injectable()
export class CreditRefillJob extends PeriodicJob {
  protected readonly jobName = 'credit-refill';

  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly identities: IdentitiesService,
    private readonly credits: CreditsService,
    private readonly clock: Clock,
  ) {
    super();
  }

  protected intervalMs(): number {
    return SCAN_INTERVAL_MS;
  }

  protected async run(): Promise<number> {
    // Any balance that stands from before today's 00:00 UTC may be due (monthly ones are checked by
    // dueRefill); the others are skipped by the query.
    const today = refillBoundaryAtOrBefore('daily', this.clock.date());
    let refilled = 0;
    const due = [
      ...(await this.keys.keysWithRefillBefore(today, SCAN_BATCH)),
      ...(await this.identities.withRefillBefore(today, SCAN_BATCH)),
    ];
    for (const holder of due) if (await this.credits.refillIfDueNow(holder)) refilled += 1;
    return refilled;
  }
}
