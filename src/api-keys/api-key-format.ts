import { ConfigOf } from '../config/config-namespace';
import { apiKeysConfig } from '../config/namespaces';
import { Secrets } from '../secrets/secrets';
import { Inject, Injectable } from '@nestjs/common';
import { createHmac, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { BASE62_ALPHABET, encodeBase62 } from '../common/ids';

const SECRET_BYTES = 32;
const SECRET_LENGTH = 43; // base62 width of 32 bytes
const CHECKSUM_LENGTH = 6; // base62 width of a 32-bit CRC
/** Characters of a key kept in clear for display (`start`). */
export const KEY_START_LENGTH = 10;

function checksum(body: string): string {
  let value = crc32(body);
  let out = '';
  while (value > 0) {
    out = BASE62_ALPHABET[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out.padStart(CHECKSUM_LENGTH, '0');
}

/**
 * The key value format: `<prefix>_` + 32 random bytes in base62 + a base62 CRC32 of everything before
 * it. The checksum lets the service (and secret scanners) reject a mistyped or made-up key without
 * touching the database.
 */
export class ApiKeyFormat {
  private readonly shape: RegExp;

  constructor(readonly prefix: string) {
    this.shape = new RegExp(`^${prefix}_[0-9A-Za-z]{${SECRET_LENGTH}}[0-9A-Za-z]{${CHECKSUM_LENGTH}}$`);
  }

  generate(): string {
    const body = `${this.prefix}_${encodeBase62(randomBytes(SECRET_BYTES))}`;
    return body + checksum(body);
  }

  /** Shape and checksum only; says nothing about whether the key exists. */
  isWellFormed(value: string): boolean {
    if (!this.shape.test(value)) return false;
    const split = value.length - CHECKSUM_LENGTH;
    return checksum(value.slice(0, split)) === value.slice(split);
  }

  /** Looks like one of our keys (prefix), as opposed to some other kind of credential. */
  hasPrefix(value: string): boolean {
    return value.startsWith(`${this.prefix}_`);
  }
}

/**
 * Keys are stored only as HMAC-SHA256 under a server secret: a leaked table cannot be replayed, and
 * unlike bcrypt it costs a few microseconds, so it can sit on every request. Keys are 256-bit random,
 * so no slow hash is needed against guessing.
 */
export class ApiKeyHasher {
  // Prepared once: given a string, createHmac would import the key again on every call.
  private readonly secret: KeyObject;

  constructor(secret: string) {
    this.secret = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  hash(value: string): string {
    return createHmac('sha256', this.secret).update(value, 'utf8').digest('hex');
  }
}

export function keyStart(value: string): string {
  return value.slice(0, KEY_START_LENGTH);
}

/**
 * The service's key values: their format under the configured prefix and their hash under the server
 * secret. Key creation and the key check use this one instance.
 */
@Injectable()
export class ApiKeyValues {
  private readonly format: ApiKeyFormat;
  private readonly hasher: ApiKeyHasher;

  constructor(@Inject(apiKeysConfig.KEY) config: ConfigOf<typeof apiKeysConfig>, secrets: Secrets) {
    this.format = new ApiKeyFormat(config.prefix);
    this.hasher = new ApiKeyHasher(secrets.apiKeyHashSecret);
  }

  generate(): string {
    return this.format.generate();
  }

  isWellFormed(value: string): boolean {
    return this.format.isWellFormed(value);
  }

  hash(value: string): string {
    return this.hasher.hash(value);
  }
}
