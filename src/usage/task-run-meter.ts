import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { KeyIdentityIds } from '../api-keys/key-identity-ids';
import type { TaskRunUsage } from './usage-measures';
import { UsageRepository } from './usage.repository';

/**
 * How the tasks module adds what ended runs used to their keys' usage: key_usage_hourly stays behind
 * this module (its repository is injected by none other), and the identity each key belongs to now is
 * asked of the keys module (KeyIdentityIds), one statement for the batch. Both run in the caller's
 * transaction, the one that records the runs' outcomes, so each run counts once.
 */
@Injectable()
export class TaskRunMeter {
  constructor(
    private readonly usage: UsageRepository,
    private readonly keyIdentities: KeyIdentityIds,
  ) {}

  async record(manager: EntityManager, runs: readonly TaskRunUsage[]): Promise<void> {
    if (!runs.length) return;
    const keys = new Map(runs.map((run) => [run.keyId, run]));
    const identityOf = await this.keyIdentities.of(manager, [...keys.values()]);
    await this.usage.addTaskRuns(manager, runs, identityOf);
  }
}
