import { Inject, Injectable } from '@nestjs/common';
import { ConfigOf } from '../config/config-namespace';
import { secretsConfig } from '../config/namespaces';
import { SecretBox } from './secret-box';

/** What a sealed value is for; each purpose has its own derived key, so one cannot open another's. */
export type SealingPurpose =
  'task-credentials' | 'event-secrets' | 'webhook-secrets' | 'organization-secrets' | 'a2a-push-tokens';

/**
 * The one place the server's secrets are read. Everything that signs, hashes or seals asks here
 * rather than deriving keys from the raw configuration itself.
 */
@Injectable()
export class Secrets {
  private readonly boxes = new Map<SealingPurpose, SecretBox>();

  constructor(@Inject(secretsConfig.KEY) private readonly config: ConfigOf<typeof secretsConfig>) {}

  /** Seals values stored at rest (AES-256-GCM), keyed from API_KEY_HASH_SECRET per purpose. */
  sealer(purpose: SealingPurpose): SecretBox {
    let box = this.boxes.get(purpose);
    if (!box) {
      box = new SecretBox(this.config.apiKeyHashSecret, purpose);
      this.boxes.set(purpose, box);
    }
    return box;
  }

  /** Keys the HMAC of API key values; changing it makes every stored key hash unrecognisable. */
  get apiKeyHashSecret(): string {
    return this.config.apiKeyHashSecret;
  }

  /** Keys the audit log's chain, its head and its checkpoints (AuditChainKey). */
  get auditChainSecret(): string {
    return this.config.auditChainSecret;
  }

  /** Signs access tokens. */
  get tokenSigningSecret(): string {
    return this.config.tokenSigningSecret;
  }
}
