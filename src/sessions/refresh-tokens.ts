import { Injectable } from '@nestjs/common';
import { createHmac, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import { Secrets } from '../secrets/secrets';

const REFRESH_TOKEN_BYTES = 32;

/**
 * Refresh tokens of dashboard sessions: 32 random bytes (base64url), stored only as HMAC-SHA256 under
 * the server's hash secret, as API keys are. They are unguessable, so no slow hash is needed, and a
 * leaked table cannot be replayed.
 */
@Injectable()
export class RefreshTokens {
  // Prepared once: given a string, createHmac would import the key again on every call.
  private readonly secret: KeyObject;

  constructor(secrets: Secrets) {
    this.secret = createSecretKey(Buffer.from(secrets.apiKeyHashSecret, 'utf8'));
  }

  generate(): string {
    return randomBytes(REFRESH_TOKEN_BYTES).toString('base64url');
  }

  hash(token: string): string {
    return createHmac('sha256', this.secret).update(token, 'utf8').digest('hex');
  }
}
