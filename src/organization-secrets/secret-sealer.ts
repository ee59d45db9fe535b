import { Injectable } from '@nestjs/common';
import { Secrets } from '../secrets/secrets';
import type { SecretBox } from '../secrets/secret-box';
import type { OrganizationSecret } from './organization-secret.entity';

/**
 * Seals and opens organization secrets' values with their own derived key ('organization-secrets',
 * from API_KEY_HASH_SECRET), so no other sealed value of the service opens with it or it with theirs.
 * A value sealed under another API_KEY_HASH_SECRET does not open (docs/model-agents.md: rotation).
 */
@Injectable()
export class SecretSealer {
  private readonly box: SecretBox;

  constructor(secrets: Secrets) {
    this.box = secrets.sealer('organization-secrets');
  }

  seal(value: string): string {
    return this.box.seal(value);
  }

  /** Async so a re-seal under a new key (a previous-key fallback) can be added without changing callers. */
  open(secret: Pick<OrganizationSecret, 'sealedValue'>): Promise<string> {
    return Promise.resolve(this.box.open(secret.sealedValue));
  }
}
