import type TestAgent from 'supertest/lib/agent';
import { setTimeout as sleep } from 'node:timers/promises';

export type Auth = { Authorization: string };

export interface CreatedKey {
  id: string;
  /** The key value, as returned once at creation. */
  key: string;
  /** The whole 201 body (key object plus `key`). */
  body: Record<string, any>;
  /** `Authorization: Bearer <key value>`. */
  auth: Auth;
}

/** POST /v1/api-keys with the given credential; `role` defaults to `administrator`. Expects 201. */
export async function createKey(
  http: TestAgent,
  auth: Auth,
  body: Record<string, unknown> = {},
): Promise<CreatedKey> {
  const res = await http
    .post('/v1/api-keys')
    .set(auth)
    .send({ name: 'test key', role: 'administrator', ...body });
  if (res.status !== 201) throw new Error(`creating a key answered ${res.status}: ${res.text}`);
  return {
    id: res.body.id,
    key: res.body.key,
    body: res.body,
    auth: { Authorization: `Bearer ${res.body.key}` },
  };
}

// The suites' one pause: Node's own, re-exported where suites already import it from.
export { sleep };

/**
 * Calls `probe` every `intervalMs` until `done(result)` holds or `timeoutMs` has passed since the call;
 * returns the last result and how long it took. The caller asserts on the result, so a condition that
 * never holds fails the test with the last value seen.
 */
export async function pollUntil<T>(
  probe: () => PromiseLike<T>,
  done: (value: T) => boolean,
  { timeoutMs = 10_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<{ value: T; elapsedMs: number }> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    const elapsedMs = Date.now() - started;
    if (done(value) || elapsedMs >= timeoutMs) return { value, elapsedMs };
    await sleep(Math.min(intervalMs, Math.max(0, timeoutMs - elapsedMs)));
  }
}
