import type { ThrottlerStorage } from '@nestjs/throttler';
import type { TimeSource, WindowBatchCounter, WindowCount, WindowToCount } from './window-counter';

/** How often counters of ended windows are dropped. */
const SWEEP_INTERVAL_MS = 30_000;

/**
 * What the in-process storages share, whichever way they count (fixed or sliding): counts answered at
 * once (no promise on RateLimitStep's path), all windows of a request in order up to the first spent one,
 * the app's clock, and a sweep of ended windows. A subclass counts one window and says what it can drop.
 */
export abstract class MemoryWindowStorage implements ThrottlerStorage, WindowBatchCounter {
  private readonly sweeper: NodeJS.Timeout;

  protected constructor(protected readonly clock: TimeSource) {
    this.sweeper = setInterval(() => this.sweep(this.clock.now()), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    _block: number,
    name: string,
  ): Promise<WindowCount> {
    return this.incrementNow(key, ttl, limit, name);
  }

  countWindows(windows: readonly WindowToCount[]): WindowCount[] {
    const counts: WindowCount[] = [];
    for (const { key, ttl, limit, name } of windows) {
      const count = this.incrementNow(key, ttl, limit, name);
      counts.push(count);
      if (count.isBlocked) break;
    }
    return counts;
  }

  /** `increment` without the promise: the counters are in this process. */
  abstract incrementNow(key: string, ttl: number, limit: number, name: string): WindowCount;

  /** Drops the counters that no longer matter at `now`. */
  protected abstract sweep(now: number): void;
}
