import { Injectable } from '@nestjs/common';
import { Invalidation, InvalidationBus } from '../cache-invalidation/invalidation-bus';
import type { Permission } from '../roles/permissions';
import type { ApiKey } from './api-key.entity';

/** A key as the guard needs it: the row, whether the old (rotated) value matched, and its permissions. */
export interface ResolvedKey {
  key: ApiKey;
  matchedPrevious: boolean;
  /** Role permissions, intersected with the owner's for a personal key. */
  permissions: ReadonlySet<Permission>;
  /** For a personal key: whether its owner is active. */
  ownerActive: boolean | null;
}

interface Slot {
  value: ResolvedKey | null;
  expiresAt: number;
}

const MAX_ENTRIES = 50_000;
// Safety net only: changes invalidate explicitly; this bounds staleness if a message were lost.
const POSITIVE_TTL_MS = 5 * 60_000;
// Unknown hashes (well-formed but not ours) are remembered briefly so a flood costs no queries.
const NEGATIVE_TTL_MS = 10_000;

/**
 * Key records by value hash, so a hot key costs no database read. Every change to a key, a user or a
 * role arrives through the InvalidationBus and drops what it touches. A load that started before an
 * invalidation is not stored (the epoch check), so a stale read cannot outlive the change.
 */
@Injectable()
export class KeyCache {
  private readonly slots = new Map<string, Slot>();
  private epoch = 0;

  constructor(bus: InvalidationBus) {
    bus.subscribe((invalidation) => this.invalidate(invalidation));
  }

  get currentEpoch(): number {
    return this.epoch;
  }

  /** undefined: not cached; null: known not to exist. */
  get(hash: string, now = Date.now()): ResolvedKey | null | undefined {
    const slot = this.slots.get(hash);
    if (!slot) return undefined;
    if (slot.expiresAt <= now) {
      this.slots.delete(hash);
      return undefined;
    }
    return slot.value;
  }

  set(hash: string, value: ResolvedKey | null, loadedAtEpoch: number, now = Date.now()): void {
    if (loadedAtEpoch !== this.epoch) return;
    if (this.slots.size >= MAX_ENTRIES) {
      // Map iteration is insertion order: drop the oldest entry.
      const oldest = this.slots.keys().next().value;
      if (oldest !== undefined) this.slots.delete(oldest);
    }
    this.slots.set(hash, { value, expiresAt: now + (value ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS) });
  }

  invalidate(invalidation: Invalidation): void {
    if (invalidation.kind === 'all') return this.clear();
    this.epoch += 1;
    for (const [hash, slot] of this.slots) {
      const key = slot.value?.key;
      if (!key) continue;
      const hit =
        (invalidation.kind === 'key' && key.id === invalidation.keyId) ||
        (invalidation.kind === 'user' && key.ownerId === invalidation.userId) ||
        (invalidation.kind === 'organization' && key.organizationId === invalidation.organizationId);
      if (hit) this.slots.delete(hash);
    }
  }

  clear(): void {
    this.epoch += 1;
    this.slots.clear();
  }
}
