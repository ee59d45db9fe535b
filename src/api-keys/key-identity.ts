import type { Identity } from '../identities/identity.entity';

// Types only, apart from KeyLookup (key-lookup.ts): the principal (src/access/principal.ts) carries
// them, and taking them from key-lookup.ts would make it depend on the services the lookup injects (a
// cycle back to the principal).

/** What a key's record shows of its identity (the key object's and verify's `identity`). */
export interface KeyIdentity {
  id: string;
  external_id: string;
  meta: Readonly<Record<string, unknown>>;
}

/**
 * What the key check enforces of a key's identity, beside the key's own: its windows (null: none) and
 * its shared balance (null: unlimited).
 */
export interface IdentityControls {
  rateLimit: { perMinute: number | null; perHour: number | null };
  /** The identity's row when it has credits (what spending and showing its live balance need). */
  credits: Identity | null;
}
