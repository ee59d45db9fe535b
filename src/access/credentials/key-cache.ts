import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { ApiKey } from '../../api-keys/api-key.entity';
import { Invalidation, InvalidationBus } from '../../cache-invalidation/invalidation-bus';
import type { IdentityControls, KeyIdentity } from '../../api-keys/key-identity';
import type { Permission } from '../../roles/permissions';

/** A key as the key check needs it: the row, whether the old (rotated) value matched, and its permissions. */
export interface ResolvedKey {
  key: ApiKey;
  matchedPrevious: boolean;
  /** Effective permissions (see roles/effective-permissions.ts). */
  permissions: ReadonlySet<Permission>;
  /** For a personal key: whether its owner is active. */
  ownerActive: boolean | null;
  /** What the key's identity shows (id, external_id, meta), loaded with the key; null: none. */
  identity: KeyIdentity | null;
  /** The identity's windows and shared balance, loaded (and invalidated) with the key; null: none. */
  identityControls: IdentityControls | null;
}

/** lru-cache holds no null: an unknown hash is remembered as an entry without a key. */
interface Entry {
  resolved: ResolvedKey | null;
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

export type KeyLoader = (hash: string) => Promise<ResolvedKey | null>;

/**
 * Key records by value hash (lru-cache), so a hot key costs no database read. Concurrent misses of one
 * hash share one load (lru-cache's fetch). Every change to a key, a user or a role arrives through the
 * InvalidationBus and drops what it touches; a load overtaken by an invalidation is repeated, so a
 * read from before a change is never stored after it. While the bus cannot hear other instances,
 * entries are trusted for a second only.
 */
@Injectable()
export class KeyCache {
  private epoch = 0;
  private readonly entries = new LRUCache<string, Entry, KeyLoader>({
    max: MAX_ENTRIES,
    ttl: POSITIVE_TTL_MS,
    // A clear() during a load must not fail the requests waiting on it: they get the fresh reload.
    ignoreFetchAbort: true,
    fetchMethod: async (hash, _stale, { options, context: load }) => {
      let resolved: ResolvedKey | null = null;
      for (let attempt = 0; attempt < MAX_RELOADS; attempt++) {
        const epoch = this.epoch;
        resolved = await load(hash);
        if (epoch === this.epoch) break;
      }
      if (!resolved) options.ttl = NEGATIVE_TTL_MS;
      return { resolved, loadedAt: Date.now() };
    },
  });

  constructor(private readonly bus: InvalidationBus) {
    bus.subscribe((invalidation) => this.invalidate(invalidation));
  }

  /**
   * The record of a value hash, from memory or loaded once however many requests miss together. An
   * entry older than a second is reloaded while the bus cannot hear other instances. A record in memory
   * is answered as it is, not in a promise: the key check of a cached key then takes no turn of the loop.
   */
  resolve(hash: string, load: KeyLoader): ResolvedKey | null | Promise<ResolvedKey | null> {
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
      const key = resolved?.key;
      if (!key) continue;
      if (
        (invalidation.kind === 'key' && key.id === invalidation.keyId) ||
        (invalidation.kind === 'user' && key.ownerId === invalidation.userId) ||
        (invalidation.kind === 'identity' && key.identityId === invalidation.identityId) ||
        (invalidation.kind === 'organization' && key.organizationId === invalidation.organizationId)
      ) {
        touched.push(hash);
      }
    }
    for (const hash of touched) this.entries.delete(hash);
  }
}
