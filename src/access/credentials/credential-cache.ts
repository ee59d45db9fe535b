import { LRUCache } from 'lru-cache';
import { Invalidation, InvalidationBus } from '../../cache-invalidation/invalidation-bus';

/** lru-cache holds no null: an unknown hash is remembered as an entry without a value. */
interface Entry<T> {
  resolved: T | null;
  loadedAt: number;
}

const MAX_ENTRIES = 50_000;
// Safety net only: changes invalidate explicitly; this bounds staleness if a message were lost.
const POSITIVE_TTL_MS = 5 * 60_000;
// Unknown hashes (well-formed but not ours) are remembered briefly so a flood costs no queries.
const NEGATIVE_TTL_MS = 10_000;
// Invalidations arriving during every reload of one hash in a row; beyond this the last load is served.
const MAX_RELOADS = 3;
// While the bus cannot hear other instances (Redis or the listener is down), an entry is trusted for
// at most this long: a revocation on another instance still holds here within a second.
const DISTRUSTED_TTL_MS = 1000;

export type CredentialLoader<T> = (hash: string) => Promise<T | null>;

/** Whether an invalidation touches a cached record (`all` is handled by the cache itself). */
export type TouchedBy<T> = (resolved: T, invalidation: Invalidation) => boolean;

/**
 * Credential records by value hash (lru-cache), so a hot credential costs no database read. Concurrent
 * misses of one hash share one load (lru-cache's fetch). Every change to what a record shows arrives
 * through the InvalidationBus and drops what it touches (`touchedBy`); a load overtaken by an invalidation
 * is repeated, so a read from before a change is never stored after it. While the bus cannot hear other
 * instances, entries are trusted for a second only. API keys (KeyCache) and OAuth access tokens each keep
 * one.
 */
export class CredentialCache<T extends object> {
  private epoch = 0;
  private readonly entries = new LRUCache<string, Entry<T>, CredentialLoader<T>>({
    max: MAX_ENTRIES,
    ttl: POSITIVE_TTL_MS,
    // A clear() during a load must not fail the requests waiting on it: they get the fresh reload.
    ignoreFetchAbort: true,
    fetchMethod: async (hash, _stale, { options, context: load }) => {
      let resolved: T | null = null;
      for (let attempt = 0; attempt < MAX_RELOADS; attempt++) {
        const epoch = this.epoch;
        resolved = await load(hash);
        if (epoch === this.epoch) break;
      }
      if (!resolved) options.ttl = NEGATIVE_TTL_MS;
      return { resolved, loadedAt: Date.now() };
    },
  });

  constructor(
    private readonly bus: InvalidationBus,
    private readonly touchedBy: TouchedBy<T>,
  ) {
    bus.subscribe((invalidation) => this.invalidate(invalidation));
  }

  /**
   * The record of a value hash, from memory or loaded once however many requests miss together. An
   * entry older than a second is reloaded while the bus cannot hear other instances. A record in memory
   * is answered as it is, not in a promise: the check of a cached credential then takes no turn of the loop.
   */
  resolve(hash: string, load: CredentialLoader<T>): T | null | Promise<T | null> {
    const cached = this.entries.get(hash);
    if (cached && (this.bus.hearsEveryInstance || Date.now() - cached.loadedAt < DISTRUSTED_TTL_MS))
      return cached.resolved;
    return this.entries
      .fetch(hash, { context: load, forceRefresh: cached !== undefined })
      .then((entry) => entry?.resolved ?? null);
  }

  invalidate(invalidation: Invalidation): void {
    this.epoch += 1;
    if (invalidation.kind === 'all') return this.entries.clear();
    const touched: string[] = [];
    for (const [hash, { resolved }] of this.entries.entries()) {
      if (resolved && this.touchedBy(resolved, invalidation)) touched.push(hash);
    }
    for (const hash of touched) this.entries.delete(hash);
  }
}
