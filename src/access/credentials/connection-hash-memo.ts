interface Remembered {
  value: string;
  hash: string;
}

/**
 * Equal strings, in time that depends only on their length (which the key format makes public): no
 * early exit, so a caller sharing a connection learns nothing from how long a mismatch took. Strings,
 * not crypto.timingSafeEqual, because that needs two Buffers made from them on every request.
 */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
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
 * - Only well-formed values are remembered, and only their hash, never whether the key is valid:
 *   every request still resolves the hash through the key cache, so a revocation is seen exactly as
 *   without the memo.
 */
export class ConnectionHashMemo {
  private readonly byConnection = new WeakMap<object, Remembered>();

  /** The hash of `value` if it is the last value hashed on this connection. */
  recall(connection: object, value: string): string | undefined {
    const remembered = this.byConnection.get(connection);
    return remembered && constantTimeEqual(remembered.value, value) ? remembered.hash : undefined;
  }

  remember(connection: object, value: string, hash: string): void {
    this.byConnection.set(connection, { value, hash });
  }
}
