import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock';
import { HOUR_MS } from './usage-range';
import { UsageIncrement, UsageRepository } from './usage.repository';

const FLUSH_INTERVAL_MS = 1_000;
/**
 * Distinct (key, hour, outcome) counters held in memory. Only a long database outage comes near it
 * (a flush normally empties them every second); past it, new counters are dropped, existing ones
 * still count.
 */
export const MAX_PENDING_COUNTERS = 100_000;
/** Bounds one statement's parameters and the rows it locks. */
const ROWS_PER_STATEMENT = 5_000;

interface KeyCounters {
  organizationId: string;
  byOutcome: Map<string, number>;
}

/**
 * Every request of a resolved key, counted on the request path without a database write: counters
 * by key, UTC hour and outcome in memory, added into key_usage_hourly about once a second in one
 * statement per batch. Additions (never overwrites) keep instances exact on one database; a failed
 * flush keeps its counts for the next one, and shutdown writes what is left.
 */
@Injectable()
export class UsageCounter implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Usage');
  /** hour start (epoch ms) -> key id -> counts by outcome. */
  private pending = new Map<number, Map<string, KeyCounters>>();
  private pendingCounters = 0;
  private dropped = 0;
  private timer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly clock: Clock,
    private readonly repository: UsageRepository,
  ) {}

  count(organizationId: string, keyId: string, outcome: string): void {
    const now = this.clock.now();
    this.add(organizationId, keyId, now - (now % HOUR_MS), outcome, 1);
    this.timer ??= this.scheduleFlush();
  }

  /** Writes every pending counter; resolves once they are in the database or kept for a retry. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flushing = this.flushing.then(() => this.writePending());
    return this.flushing;
  }

  /** Runs before connections close (see AuditService.beforeApplicationShutdown). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.flush();
    clearTimeout(this.timer);
    if (this.pendingCounters) {
      this.logger.error(`${this.pendingCounters} usage counters could not be written before shutdown`);
    }
  }

  private add(organizationId: string, keyId: string, hour: number, outcome: string, count: number): void {
    const counters = this.pending.get(hour)?.get(keyId);
    const current = counters?.byOutcome.get(outcome);
    if (current !== undefined) {
      counters!.byOutcome.set(outcome, current + count);
      return;
    }
    if (this.pendingCounters >= MAX_PENDING_COUNTERS) {
      this.dropped += count;
      return;
    }
    this.countersOf(organizationId, keyId, hour).byOutcome.set(outcome, count);
    this.pendingCounters += 1;
  }

  private countersOf(organizationId: string, keyId: string, hour: number): KeyCounters {
    let keys = this.pending.get(hour);
    if (!keys) this.pending.set(hour, (keys = new Map()));
    let counters = keys.get(keyId);
    if (!counters) keys.set(keyId, (counters = { organizationId, byOutcome: new Map() }));
    return counters;
  }

  private scheduleFlush(): NodeJS.Timeout {
    const timer = setTimeout(() => void this.flush(), FLUSH_INTERVAL_MS);
    timer.unref();
    return timer;
  }

  private async writePending(): Promise<void> {
    const increments = this.takePending();
    for (let done = 0; done < increments.length; done += ROWS_PER_STATEMENT) {
      try {
        await this.repository.add(increments.slice(done, done + ROWS_PER_STATEMENT));
      } catch (error) {
        const unwritten = increments.slice(done);
        for (const row of unwritten)
          this.add(row.organizationId, row.keyId, row.hour, row.outcome, row.count);
        this.logger.warn(
          `could not write ${unwritten.length} usage counters, retrying: ${(error as Error).message}`,
        );
        this.timer ??= this.scheduleFlush();
        break;
      }
    }
    if (this.dropped) {
      this.logger.warn(
        `dropped ${this.dropped} requests from usage: ${MAX_PENDING_COUNTERS} counters were already waiting to be written`,
      );
      this.dropped = 0;
    }
  }

  /**
   * Empties the counters into rows sorted as the table's primary key, so that instances adding to
   * the same rows lock them in the same order and cannot deadlock.
   */
  private takePending(): UsageIncrement[] {
    const pending = this.pending;
    this.pending = new Map();
    this.pendingCounters = 0;
    const increments: UsageIncrement[] = [];
    for (const [hour, keys] of pending) {
      for (const [keyId, { organizationId, byOutcome }] of keys) {
        for (const [outcome, count] of byOutcome)
          increments.push({ organizationId, keyId, hour, outcome, count });
      }
    }
    return increments.sort(
      (a, b) => compareText(a.keyId, b.keyId) || a.hour - b.hour || compareText(a.outcome, b.outcome),
    );
  }
}

const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
