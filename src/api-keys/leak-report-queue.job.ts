import { Injectable, Logger } from '@nestjs/common';
import { PeriodicJob } from '../scheduling/periodic-job';
import { KeyLeaks } from './key-leaks';

/** How often every instance looks for reports that no instance applied (one stopped after answering). */
const SWEEP_MS = 10_000;

/**
 * Applies queued leak reports (KeyLeaks.queue) off the request that took them: `kick()` after a
 * report is stored starts a pass at once, and the periodic pass (at start too) takes reports another
 * instance stored and could not apply before it stopped. A pass takes reports one at a time until
 * none is left; shutdown lets the report in hand finish and leaves the rest, durable, to the next pass.
 */
@Injectable()
export class LeakReportQueueJob extends PeriodicJob {
  protected readonly jobName = 'leak-report-queue';
  private kicked: Promise<unknown> = Promise.resolve();
  private kickWaiting = false;
  private stopping = false;
  private readonly log = new Logger(LeakReportQueueJob.name);

  constructor(private readonly leaks: KeyLeaks) {
    super();
  }

  protected intervalMs(): number {
    return SWEEP_MS;
  }

  /**
   * A pass after the one in progress, if any: a pass already running may have found the queue empty
   * before the caller's report was stored. One waiting pass serves every kick made before it starts.
   */
  kick(): void {
    if (this.kickWaiting || this.stopping) return;
    this.kickWaiting = true;
    this.kicked = this.kicked.then(() => {
      this.kickWaiting = false;
      return this.run().catch((error: unknown) =>
        this.log.warn(`Applying leak reports failed: ${(error as Error).message}; the next pass retries`),
      );
    });
  }

  /** Returns how many reports were applied. */
  protected async run(): Promise<number> {
    let applied = 0;
    while (!this.stopping && (await this.leaks.applyQueued())) applied += 1;
    return applied;
  }

  override async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    await super.onModuleDestroy();
    await this.kicked;
  }
}
