import type { Logger } from '@nestjs/common';
import { isDatabaseUnavailable } from './database-errors';

/** First retry after a failed write; each failure in a row doubles it, up to MAX_RETRY_DELAY_MS. */
const FIRST_RETRY_DELAY_MS = 250;
/** A database that is back is written to within this long, without being hammered while it is down. */
export const MAX_RETRY_DELAY_MS = 5_000;
/**
 * A batch the database refuses this many times in a row while it answers (not "unavailable": it
 * cannot store something in it) is dropped, so that it does not hold back everything behind it.
 */
export const MAX_REFUSALS = 5;

export interface WriteBacklogOptions {
  /** What waits, in log lines: "audit entries". */
  what: string;
  /** What a dropped unit is, in log lines: "audit entries", "requests from usage". */
  droppedWhat: string;
  /** At most this many units wait; past it new ones are dropped (and counted). */
  capacity: number;
  /** Delay between something waiting and its write when all is well. */
  delayMs: number;
  logger: Logger;
  /** Units waiting now (those whose write failed included). */
  waiting: () => number;
  /**
   * Writes what waits, oldest first, calling `progressed()` after each batch written. On failure it
   * throws and keeps what it could not write, in order, for the next call.
   */
  write: () => Promise<void>;
  /** Removes the oldest batch (the one refused MAX_REFUSALS times); returns how many dropped units it held. */
  discardOldest: () => number;
}

/**
 * Writes that wait in memory for the database: the request path adds to a buffer (audit entries,
 * usage counters) and this writes it off the request, one write at a time. A failed write is kept and
 * retried with exponential backoff for as long as the database is unavailable (a batch it refuses
 * although it answers is dropped after MAX_REFUSALS tries); the buffer is bounded (`capacity`), and
 * what it refuses is counted (`dropped`) and logged. `waiting` and `dropped` are exported by
 * MetricsService.
 */
export class WriteBacklog {
  /** Units dropped since start: `capacity` already waited, or the database refused them (a metric: only grows). */
  dropped = 0;
  private droppedUnreported = 0;
  private failures = 0;
  /** Refusals in a row of the oldest batch by a database that answers. */
  private refusals = 0;
  private timer?: NodeJS.Timeout;
  /** The last write started (or chained); writes never overlap. */
  private done: Promise<void> = Promise.resolve();
  /** A write chained after the running one and not started yet: further flushes join it. */
  private queued?: Promise<void>;
  private closed = false;

  constructor(private readonly options: WriteBacklogOptions) {}

  get waiting(): number {
    return this.options.waiting();
  }

  /** A batch was written: the refusals counted were not the oldest batch's. */
  progressed(): void {
    this.refusals = 0;
  }

  /** Whether `units` more may wait; if not they are dropped and counted. */
  admit(units: number): boolean {
    if (this.options.waiting() + units <= this.options.capacity) return true;
    if (!this.droppedUnreported) {
      this.options.logger.warn(
        `${this.options.capacity} ${this.options.what} already wait to be written: dropping new ones until the database takes them`,
      );
    }
    this.dropped += units;
    this.droppedUnreported += units;
    return false;
  }

  /**
   * Something was added: it is written after `delayMs`, or at once when `now` (a full batch). While
   * writes fail, the retry already scheduled takes it.
   */
  schedule(now = false): void {
    if (this.failures || this.closed) return;
    if (now) {
      if (!this.queued) void this.flush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.options.delayMs);
      this.timer.unref();
    }
  }

  /** Writes what waits; resolves once it is written or kept for a retry (never rejects). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queued ??= this.done.then(() => {
      this.queued = undefined;
      return this.writeOnce();
    });
    this.done = this.queued;
    return this.queued;
  }

  /**
   * At shutdown: writes what waits, retrying until `deadlineMs` has passed, then stops retrying.
   * Returns how many units could not be written (and logs them as a count).
   */
  async close(deadlineMs: number): Promise<number> {
    const deadline = Date.now() + deadlineMs;
    const remaining = () => Math.max(0, deadline - Date.now());
    // A write that hangs (a database that does not answer) must not hold the shutdown past its deadline.
    const withinDeadline = (work: Promise<void>) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining());
        void work.then(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    await withinDeadline(this.flush());
    while (this.options.waiting() && remaining() > 0) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(this.retryDelayMs(), remaining())));
      await withinDeadline(this.flush());
    }
    this.closed = true;
    clearTimeout(this.timer);
    this.reportDropped();
    const left = this.options.waiting();
    if (left) this.options.logger.error(`${left} ${this.options.what} could not be written before shutdown`);
    return left;
  }

  private async writeOnce(): Promise<void> {
    try {
      await this.options.write();
    } catch (error) {
      this.failures += 1;
      if (isDatabaseUnavailable(error)) this.refusals = 0;
      else if (++this.refusals >= MAX_REFUSALS) this.discardOldest(error as Error);
      if (this.failures === 1) {
        this.options.logger.warn(
          `could not write ${this.options.what}: keeping ${this.options.waiting()} and retrying: ${(error as Error).message}`,
        );
      }
      if (!this.closed) {
        this.timer = setTimeout(() => void this.flush(), this.retryDelayMs());
        this.timer.unref();
      }
      return;
    }
    if (this.failures) {
      this.options.logger.log(
        `wrote the ${this.options.what} that waited, after ${this.failures} failed tries`,
      );
      this.failures = 0;
    }
    this.reportDropped();
    // Added while this write ran, after it had taken what it writes.
    if (this.options.waiting()) this.schedule();
  }

  private discardOldest(error: Error): void {
    this.refusals = 0;
    const units = this.options.discardOldest();
    this.dropped += units;
    this.options.logger.error(
      `dropped ${units} ${this.options.droppedWhat}: the database refused them ${MAX_REFUSALS} times: ${error.message}`,
    );
  }

  private retryDelayMs(): number {
    return Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** Math.max(0, this.failures - 1));
  }

  private reportDropped(): void {
    if (!this.droppedUnreported) return;
    this.options.logger.warn(
      `dropped ${this.droppedUnreported} ${this.options.droppedWhat}: ${this.options.capacity} ${this.options.what} were already waiting to be written`,
    );
    this.droppedUnreported = 0;
  }
}
