import { Injectable } from '@nestjs/common';
import type { ApiKey } from './api-key.entity';
import { ApiKeysRepository } from './api-keys.repository';

/**
 * How other modules find a key by the value presented (the key check's credential resolver): the
 * api_keys table stays behind this module. One indexed query, returned as is (no extra await).
 */
@Injectable()
export class KeyLookup {
  constructor(private readonly keys: ApiKeysRepository) {}

  /** The key whose current or previous (rotated-out) value has this hash, unless deleted. */
  byValueHash(hash: string): Promise<{ key: ApiKey; matchedPrevious: boolean } | null> {
    return this.keys.findByValueHash(hash);
  }

  /** A key of the organization by id, unless deleted (a task token stands for the key that made its task). */
  byId(organizationId: string, id: string): Promise<ApiKey | null> {
    return this.keys.findInOrganization(organizationId, id);
  }
}
