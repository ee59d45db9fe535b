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
    return this.incrementNow(key, ttl, limit, name, this.clock.now());
  }

  countWindows(windows: readonly WindowToCount[]): WindowCount[] {
    const counts: WindowCount[] = [];
    // One instant for all windows of the request.
    const now = this.clock.now();
    for (const { key, ttl, limit, name } of windows) {
      const count = this.incrementNow(key, ttl, limit, name, now);
      counts.push(count);
      if (count.isBlocked) break;
    }
    return counts;
  }

  /** `increment` without the promise, at `now`: the counters are in this process. */
  abstract incrementNow(key: string, ttl: number, limit: number, name: string, now: number): WindowCount;

  /** Drops the counters that no longer matter at `now`. */
  protected abstract sweep(now: number): void;
}

/**
 * Counters by throttler name, then storage key. Two lookups rather than one by `${name}:${key}`: no
 * string is built on every request, and a key string the caller keeps (RateLimitStep does, per key)
 * has its hash computed once.
 */
export class WindowCounters<T> {
  private readonly byName = new Map<string, Map<string, T>>();

  get(name: string, key: string): T | undefined {
    return this.byName.get(name)?.get(key);
  }

  set(name: string, key: string, value: T): void {
    let byKey = this.byName.get(name);
    if (!byKey) this.byName.set(name, (byKey = new Map()));
    byKey.set(key, value);
  }

  /** Drops every counter `ended` says is over. */
  sweep(ended: (value: T) => boolean): void {
    for (const byKey of this.byName.values())
      for (const [key, value] of byKey) if (ended(value)) byKey.delete(key);
  }
}
