import { randomFillSync } from 'node:crypto';

export const BASE62_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Every public identifier carries its type, so a misplaced id is obvious in a log or a support ticket.
 * Each module declares the kinds of id it issues in its own `<module>.declarations.ts`; a prefix is
 * taken once across all of them, so two modules cannot issue look-alike ids.
 */
export interface IdKind {
  readonly prefix: string;
}

const ID_PREFIX_SHAPE = /^[a-z]{2,12}$/;
const takenPrefixes = new Set<string>();

export function defineIdKind(prefix: string): IdKind {
  if (!ID_PREFIX_SHAPE.test(prefix)) throw new Error(`id prefix "${prefix}" must be 2-12 lowercase letters`);
  if (takenPrefixes.has(prefix)) throw new Error(`id prefix "${prefix}" is declared twice`);
  takenPrefixes.add(prefix);
  return Object.freeze({ prefix });
}

/** Encodes bytes as base62 (big-endian), padded to the length that many bytes always need. */
export function encodeBase62(bytes: Uint8Array): string {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  let out = '';
  while (value > 0n) {
    out = BASE62_ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  const width = Math.ceil((bytes.length * 8) / Math.log2(62));
  return out.padStart(width, '0');
}

const ID_BYTES = 16;
// Random bytes are drawn from the CSPRNG a page at a time and each used once: a call per id (a new
// Buffer and a trip into OpenSSL each time) was 3% of a task creation's CPU.
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolOffset = 0;

function freshRandomBytes(count: number): Uint8Array {
  if (poolOffset + count > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES));
    poolOffset = 0;
  }
  const bytes = pool.subarray(poolOffset, poolOffset + count);
  poolOffset += count;
  return bytes;
}

/** 16 random bytes: 128 bits, 22 base62 characters, unguessable and collision-free in practice. */
export function newId(kind: IdKind): string {
  return `${kind.prefix}_${encodeBase62(freshRandomBytes(ID_BYTES))}`;
}

const ID_SHAPE = /^[a-z]+_[0-9A-Za-z]{22}$/;

/** True when the value could be an id of that kind; lets a handler answer 404 without a query. */
export function isIdOf(kind: IdKind, value: string): boolean {
  return value.startsWith(`${kind.prefix}_`) && ID_SHAPE.test(value);
}
