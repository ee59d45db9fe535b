import { Injectable } from '@nestjs/common';
import { IdentitySummaryResponse } from '../identities/dto/identity.dto';
import { IdentitiesService } from '../identities/identities.service';
import type { ApiKey } from './api-key.entity';
import { ApiKeysRepository } from './api-keys.repository';
import type { IdentityControls, KeyIdentity } from './key-identity';

// Declared apart so the principal can name them without depending on this lookup's services.
export type { IdentityControls, KeyIdentity } from './key-identity';

export interface FoundKey {
  key: ApiKey;
  matchedPrevious: boolean;
  identity: KeyIdentity | null;
  identityControls: IdentityControls | null;
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
    return { ...found, ...(await this.identityOf(found.key)) };
  }

  /** A key of the organization by id, unless deleted (a task token stands for the key that made its task). */
  async byId(organizationId: string, id: string): Promise<FoundKey | null> {
    const key = await this.keys.findInOrganization(organizationId, id);
    if (!key) return null;
    return { key, matchedPrevious: false, ...(await this.identityOf(key)) };
  }

  private async identityOf(key: ApiKey): Promise<Pick<FoundKey, 'identity' | 'identityControls'>> {
    const row = key.identityId ? await this.identities.row(key.organizationId, key.identityId) : null;
    if (!row) return { identity: null, identityControls: null };
    const shown = IdentitySummaryResponse.of(row);
    return {
      identity: Object.freeze({ ...shown, meta: Object.freeze(shown.meta) }),
      identityControls: Object.freeze({
        rateLimit: Object.freeze({ perMinute: row.rateLimitPerMinute, perHour: row.rateLimitPerHour }),
        credits: row.creditsRemaining === null ? null : row,
      }),
    };
  }
}
