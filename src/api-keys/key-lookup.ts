import { Injectable } from '@nestjs/common';
import { IdentitiesService } from '../identities/identities.service';
import type { ApiKey } from './api-key.entity';
import { ApiKeysRepository } from './api-keys.repository';

/** What a key's record shows of its identity (the key object's and verify's `identity`). */
export interface KeyIdentity {
  id: string;
  external_id: string;
  meta: Readonly<Record<string, unknown>>;
}

export interface FoundKey {
  key: ApiKey;
  matchedPrevious: boolean;
  identity: KeyIdentity | null;
}

/**
 * How other modules find a key by the value presented (the key check's credential resolver): the
 * api_keys table stays behind this module. One indexed query, and one more by primary key for a key
 * that names an identity: the identity rides with the key's cached record (a change to the identity
 * invalidates the records of its keys), so the key check never reads it per request.
 */
@Injectable()
export class KeyLookup {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly identities: IdentitiesService,
  ) {}

  /** The key whose current or previous (rotated-out) value has this hash, unless deleted. */
  async byValueHash(hash: string): Promise<FoundKey | null> {
    const found = await this.keys.findByValueHash(hash);
    if (!found) return null;
    return { ...found, identity: await this.identityOf(found.key) };
  }

  /** A key of the organization by id, unless deleted (a task token stands for the key that made its task). */
  async byId(organizationId: string, id: string): Promise<FoundKey | null> {
    const key = await this.keys.findInOrganization(organizationId, id);
    if (!key) return null;
    return { key, matchedPrevious: false, identity: await this.identityOf(key) };
  }

  private async identityOf(key: ApiKey): Promise<KeyIdentity | null> {
    if (!key.identityId) return null;
    const identity = (await this.identities.summaries(key.organizationId, [key.identityId])).get(
      key.identityId,
    );
    return identity ? Object.freeze({ ...identity, meta: Object.freeze(identity.meta) }) : null;
  }
}
