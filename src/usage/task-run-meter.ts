import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { TaskRunUsage } from './usage-measures';
import { UsageRepository } from './usage.repository';

/**
 * How the tasks module adds what ended runs used to their keys' usage: key_usage_hourly stays behind
 * this module (its repository is injected by none other). It writes in the caller's transaction, the
 * one that records the runs' outcomes, so each run counts once.
 */
@Injectable()
export class TaskRunMeter {
  constructor(private readonly usage: UsageRepository) {}

  record(manager: EntityManager, runs: readonly TaskRunUsage[]): Promise<void> {
    return this.usage.addTaskRuns(manager, runs);
  }
}
