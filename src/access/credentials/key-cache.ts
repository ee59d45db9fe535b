import { Injectable } from '@nestjs/common';
import type { ApiKey } from '../../api-keys/api-key.entity';
import { Invalidation, InvalidationBus } from '../../cache-invalidation/invalidation-bus';
import type { IdentityControls, KeyIdentity } from '../../api-keys/key-identity';
import type { Permission } from '../../roles/permissions';
import { CredentialCache, type CredentialLoader } from './credential-cache';

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

export type KeyLoader = CredentialLoader<ResolvedKey>;

/** What a change touches among cached keys: the key, its owner, its identity, or its organization's roles. */
function keyTouchedBy({ key }: ResolvedKey, invalidation: Invalidation): boolean {
  return (
    (invalidation.kind === 'key' && key.id === invalidation.keyId) ||
    (invalidation.kind === 'user' && key.ownerId === invalidation.userId) ||
    (invalidation.kind === 'identity' && key.identityId === invalidation.identityId) ||
    (invalidation.kind === 'organization' && key.organizationId === invalidation.organizationId)
  );
}

/** Key records by value hash (CredentialCache), dropped by every change to a key, a user, an identity or a role. */
@Injectable()
export class KeyCache extends CredentialCache<ResolvedKey> {
  constructor(bus: InvalidationBus) {
    super(bus, keyTouchedBy);
  }
}
