import { ConfigOf } from '../config/config-namespace';
import { apiKeysConfig } from '../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import { PeriodicJob } from '../scheduling/periodic-job';
import { EntityManager } from 'typeorm';
import { SYSTEM_ACTOR } from '../audit/audit.service';
import type { ApiKey } from './api-key.entity';
import { ApiKeysRepository } from './api-keys.repository';
import { KeyChangeRecorder } from './key-change-recorder';

/**
 * Records `key.expiring` (EXPIRY_WARNING_DAYS ahead) and `key.expired`, once per key. Expiry itself
 * needs no job (the guard compares the clock); this writes the audit entries and events. Each scan
 * claims its rows with FOR UPDATE SKIP LOCKED and marks them in the same transaction, so several
 * instances never record one twice, and the scan at start catches up on what passed while down.
 */
@Injectable()
export class KeyExpiryJob extends PeriodicJob {
  protected readonly jobName = 'key-expiry';

  constructor(
    @Inject(apiKeysConfig.KEY) private readonly config: ConfigOf<typeof apiKeysConfig>,
    private readonly keys: ApiKeysRepository,
    private readonly changes: KeyChangeRecorder,
  ) {
    super();
  }

  protected intervalMs(): number {
    return this.config.expiryScanSeconds * 1000;
  }

  /** Returns how many entries were recorded. */
  protected run(): Promise<number> {
    return this.keys.transaction(
      async (manager) => (await this.warnExpiring(manager)) + (await this.recordExpired(manager)),
    );
  }

  private async warnExpiring(manager: EntityManager): Promise<number> {
    const keys = await this.keys.claimExpiryWarnings(manager, this.config.expiryWarningDays);
    await this.recordAll(manager, keys, 'key.expiring');
    return keys.length;
  }

  private async recordExpired(manager: EntityManager): Promise<number> {
    const keys = await this.keys.claimExpired(manager);
    await this.recordAll(manager, keys, 'key.expired');
    return keys.length;
  }

  private recordAll(manager: EntityManager, keys: ApiKey[], action: 'key.expiring' | 'key.expired') {
    return this.changes.record(
      manager,
      keys.map((key) => ({
        key,
        action,
        actor: SYSTEM_ACTOR,
        details: { expiration: key.expiration!.toISOString() },
      })),
    );
  }
}
