import { createHash, hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { BASE62_ALPHABET, encodeBase62 } from '../common/ids';

const SECRET_BYTES = 32;
const SECRET_LENGTH = 43; // base62 width of 32 bytes
const CHECKSUM_LENGTH = 6; // base62 width of a 32-bit CRC
const HMAC_BLOCK = 64; // SHA-256 block size
const SHA256_BYTES = 32;
const MAX_INLINE_MESSAGE = 256;
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
 * unlike bcrypt it costs about a microsecond, so it can sit on every request. Keys are 256-bit random,
 * so no slow hash is needed against guessing.
 */
export class ApiKeyHasher {
  // HMAC-SHA256 (RFC 2104) = H((K ^ opad) || H((K ^ ipad) || m)), written as two one-shot hashes over
  // reused buffers. On a loaded server, creating an Hmac object per call (key setup, digest lookup)
  // cost several times the hashing itself; crypto.hash keeps its digest cached.
  private readonly inner = Buffer.alloc(HMAC_BLOCK + MAX_INLINE_MESSAGE);
  private readonly outer = Buffer.alloc(HMAC_BLOCK + SHA256_BYTES);

  constructor(secret: string) {
    let key = Buffer.from(secret, 'utf8');
    if (key.length > HMAC_BLOCK) key = createHash('sha256').update(key).digest();
    for (let i = 0; i < HMAC_BLOCK; i++) {
      const byte = i < key.length ? key[i] : 0;
      this.inner[i] = byte ^ 0x36;
      this.outer[i] = byte ^ 0x5c;
    }
  }

  hash(value: string): string {
    // Synchronous from here to the return, so the shared buffers are never used by two calls at once.
    let innerInput: Buffer;
    if (value.length * 3 <= MAX_INLINE_MESSAGE) {
      // Three bytes per UTF-16 unit is the most UTF-8 needs, so the write cannot be cut short.
      const length = this.inner.write(value, HMAC_BLOCK, 'utf8');
      innerInput = this.inner.subarray(0, HMAC_BLOCK + length);
    } else {
      innerInput = Buffer.concat([this.inner.subarray(0, HMAC_BLOCK), Buffer.from(value, 'utf8')]);
    }
    hash('sha256', innerInput, 'buffer').copy(this.outer, HMAC_BLOCK);
    return hash('sha256', this.outer, 'hex');
  }
}

export function keyStart(value: string): string {
  return value.slice(0, KEY_START_LENGTH);
}
