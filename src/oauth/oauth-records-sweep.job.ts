import { Injectable } from '@nestjs/common';
import { PeriodicJob } from '../scheduling/periodic-job';
import { OAuthRecordsRepository } from './oauth-records.repository';

const HOUR_MS = 3_600_000;

/**
 * Hourly: deletes oidc-provider's expired records (codes, tokens, sessions, interactions, grants) and
 * the listed grants whose provider grant is gone with them. Expired rows are never answered anyway
 * (OAuthRecordsRepository checks `expires_at` on every read); this only keeps the table small.
 * Instances running it at once delete the same rows.
 */
@Injectable()
export class OAuthRecordsSweepJob extends PeriodicJob {
  protected readonly jobName = 'oauth-records-sweep';

  constructor(private readonly records: OAuthRecordsRepository) {
    super();
  }

  protected intervalMs(): number {
    return HOUR_MS;
  }

  protected run(): Promise<number> {
    return this.records.deleteExpired();
  }
}
