import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { pollUntil } from './keys';

/**
 * For suites that run two application instances on one database: PGlite serves a single process, so
 * they need the run's PostgreSQL server (DATABASE_URL) and are skipped without it, saying so.
 */
export const HAS_POSTGRES = Boolean(process.env.GATEHOUSE_TEST_SERVER_URL);

/** Instances share a Redis (one, or a cluster): rate-limit windows are then counted together. */
export const HAS_SHARED_REDIS = Boolean(process.env.REDIS_URL || process.env.REDIS_CLUSTER_NODES);

export function describeWithPostgres(suite: string): jest.Describe {
  // Visible in the run's output, so a skipped suite is not mistaken for a passing one.
  if (!HAS_POSTGRES)
    console.warn(`${suite} skipped: it needs PostgreSQL (set DATABASE_URL); PGlite serves a single process.`);
  return HAS_POSTGRES ? describe : describe.skip;
}

/**
 * Instances of one deployment must sign tokens, hash keys and key the audit chain alike (each would make
 * its own otherwise).
 */
export function sharedSecrets(): {
  TOKEN_SIGNING_SECRET: string;
  API_KEY_HASH_SECRET: string;
  AUDIT_CHAIN_SECRET: string;
} {
  return {
    TOKEN_SIGNING_SECRET: randomBytes(32).toString('hex'),
    API_KEY_HASH_SECRET: randomBytes(32).toString('hex'),
    AUDIT_CHAIN_SECRET: randomBytes(32).toString('hex'),
  };
}

/** The contract's bound for a change (revocation, disabling, a top-up) to hold on every instance. */
export const PROPAGATION_BOUND_MS = 1_000;

/**
 * Polls `probe` every 50 ms until `done` holds, for at most the contract's second after the change
 * returned; fails with the last answer if it never does.
 */
export async function expectWithinOneSecond(
  probe: () => PromiseLike<Response>,
  done: (res: Response) => boolean,
): Promise<Response> {
  const { value, elapsedMs } = await pollUntil(probe, done, {
    timeoutMs: PROPAGATION_BOUND_MS,
    intervalMs: 50,
  });
  if (!done(value)) {
    throw new Error(
      `still not changed ${elapsedMs} ms after the change: ${value.status} ${JSON.stringify(value.body)}`,
    );
  }
  return value;
}
