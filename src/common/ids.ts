import { randomFillSync } from 'node:crypto';

export const BASE62_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Every public identifier carries its type, so a misplaced id is obvious in a log or a support ticket. */
export const ID_PREFIXES = {
  apiKey: 'key',
  user: 'usr',
  organization: 'org',
  team: 'team',
  role: 'role',
  agent: 'agent',
  task: 'task',
  file: 'file',
  event: 'evt',
  webhook: 'whk',
  auditEntry: 'aud',
  delivery: 'dlv',
  dashboardSession: 'ses',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

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
  return `${ID_PREFIXES[kind]}_${encodeBase62(freshRandomBytes(ID_BYTES))}`;
}

const ID_SHAPE = /^[a-z]+_[0-9A-Za-z]{22}$/;

/** True when the value could be an id of that kind; lets a handler answer 404 without a query. */
export function isIdOf(kind: IdKind, value: string): boolean {
  return value.startsWith(`${ID_PREFIXES[kind]}_`) && ID_SHAPE.test(value);
}
