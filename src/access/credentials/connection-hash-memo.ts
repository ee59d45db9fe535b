import { timingSafeEqual } from 'node:crypto';

interface Remembered {
  value: Buffer;
  hash: string;
}

/**
 * The last API key presented on each connection, with its hash. Clients keep connections alive and
 * send the same key on every request of one, and the HMAC of the value is the largest single cost of
 * the key check under load (a native Hmac object per call: about 10 µs at 50 connections, 6 points of
 * the verify benchmark), so it is computed once per connection and value instead of once per request.
 *
 * - The value is compared in constant time: behind a proxy, one connection carries many callers.
 * - It lives exactly as long as the socket that carried it (a WeakMap on the socket), in this process
 *   only: nothing serialises, logs or shares it, and the request that carried it held it anyway.
 * - Only well-formed values are remembered, and only their hash, never whether the key is valid: every request still resolves the
 *   hash through the key cache, so a revocation is seen exactly as without the memo.
 */
export class ConnectionHashMemo {
  private readonly byConnection = new WeakMap<object, Remembered>();

  /** The hash of `value` if it is the last value hashed on this connection. */
  recall(connection: object, value: string): string | undefined {
    const remembered = this.byConnection.get(connection);
    if (!remembered || remembered.value.length !== Buffer.byteLength(value, 'utf8')) return undefined;
    return timingSafeEqual(remembered.value, Buffer.from(value, 'utf8')) ? remembered.hash : undefined;
  }

  remember(connection: object, value: string, hash: string): void {
    this.byConnection.set(connection, { value: Buffer.from(value, 'utf8'), hash });
  }
}
