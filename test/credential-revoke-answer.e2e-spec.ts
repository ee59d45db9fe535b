import { Client } from 'pg';
import type { Response } from 'supertest';
import { ApiKeyFormat } from '../src/api-keys/api-key-format';
import { ApiKeyHasher } from '../src/api-keys/api-key-format';
import { expectProblem, SignedUpOrganization, signUpOrganization } from './support/factories';
import { createKey, CreatedKey, pollUntil } from './support/keys';
import { HAS_POSTGRES, sharedSecrets } from './support/instances';
import { dropTestDatabase, startTestApp, TestApp } from './support/test-app';

/** Headers that differ between any two answers, whatever they answer: when, and which request. */
const PER_REQUEST_HEADERS = new Set(['date', 'x-request-id']);

/** Everything a caller can read of an answer, but the per-request headers. */
const answerOf = (res: Response) => ({
  status: res.status,
  headers: Object.fromEntries(Object.entries(res.headers).filter(([name]) => !PER_REQUEST_HEADERS.has(name))),
  body: res.text,
});

/**
 * POST /v1/credentials/revoke is no oracle: its answer is the same, byte for byte, whether a value names
 * a live key or nothing, and it leaves before any key is looked up (the lookup and the leak_response
 * cost more for a live key, so they run after the answer, from a durable queue).
 */
describe('POST /v1/credentials/revoke answers before it looks', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  let address = 0;

  beforeAll(async () => {
    t = await startTestApp({ env: { TRUST_PROXY: '1', ...sharedSecrets() } });
    org = await signUpOrganization(t.http, 'Revoke answers');
  });
  afterAll(() => t?.close());

  // Each call from its own address, so the per-address limit's headers are alike too.
  const revoke = (credentials: string[]) =>
    t.http
      .post('/v1/credentials/revoke')
      .set('X-Forwarded-For', `203.0.113.${++address}`)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ credentials }));

  const verifyStatus = async (key: CreatedKey) => (await t.http.get('/v1/auth/verify').set(key.auth)).status;

  const waitUntilRevoked = async (key: CreatedKey) => {
    const { value } = await pollUntil(
      () => verifyStatus(key),
      (status) => status === 401,
      {
        timeoutMs: 30_000,
      },
    );
    expect(value).toBe(401);
    expectProblem(await t.http.get('/v1/auth/verify').set(key.auth), 401, 'key_revoked');
  };

  it('answers a live key and a made-up value of the same form alike; the live key is revoked after', async () => {
    const key = await createKey(t.http, org.auth, { name: 'pasted in a gist', role: 'viewer' });
    const madeUp = new ApiKeyFormat(key.key.slice(0, key.key.indexOf('_'))).generate();
    expect(madeUp).toHaveLength(key.key.length);

    const live = await revoke([key.key]);
    const unknown = await revoke([madeUp]);
    expect(live.status).toBe(202);
    expect(JSON.parse(live.text)).toEqual({ received: 1 });
    expect(answerOf(live)).toEqual(answerOf(unknown));

    await waitUntilRevoked(key);
    const audit = (await t.http.get(`/v1/api-keys/${key.id}/audit-log?limit=100`).set(org.auth).expect(200))
      .body.data as { action: string; details: unknown }[];
    expect(audit.filter((entry) => entry.action === 'key.leaked').map((entry) => entry.details)).toEqual([
      { source: 'public_report', url: null, action_taken: 'revoked' },
    ]);
  });

  // A second connection to the app's database takes the key's row lock; PGlite serves one connection.
  (HAS_POSTGRES ? it : it.skip)(
    "answers while the key's row is locked, so the answer does not wait for the lookup; the key is revoked once the lock goes",
    async () => {
      const key = await createKey(t.http, org.auth, { role: 'viewer' });
      const holder = new Client({ connectionString: t.databaseUrl });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT id FROM api_keys WHERE id = $1 FOR UPDATE', [key.id]);
        // Looking the key up before answering would wait for this lock (and end in the statement timeout's 503).
        const answer = await revoke([key.key]).timeout(20_000);
        expect(answer.status).toBe(202);
        expect(await verifyStatus(key)).toBe(200);
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        await holder.end();
      }
      await waitUntilRevoked(key);
    },
  );

  // The report an instance stored and could not apply (it stopped right after answering) is in the
  // database: the next instance to start applies it.
  (HAS_POSTGRES ? it : it.skip)(
    'applies a report stored by an instance that stopped before applying it',
    async () => {
      const secrets = sharedSecrets();
      const first = await startTestApp({ env: secrets });
      const databaseUrl = first.databaseUrl!;
      let second: TestApp | undefined;
      try {
        const owner = await signUpOrganization(first.http, 'Stopped instance');
        const key = await createKey(first.http, owner.auth, { role: 'viewer' });
        await first.close({ keepData: true });
        const db = new Client({ connectionString: databaseUrl });
        await db.connect();
        try {
          await db.query(
            `INSERT INTO pending_leak_reports (id, source, value_hashes, ip, user_agent, received_at)
           VALUES ('left-behind', 'public_report', $1, '203.0.113.250', 'curl', now())`,
            [[new ApiKeyHasher(secrets.API_KEY_HASH_SECRET).hash(key.key)]],
          );
        } finally {
          await db.end();
        }
        second = await startTestApp({ databaseUrl, env: secrets });
        const { value } = await pollUntil(
          async () => (await second!.http.get('/v1/auth/verify').set(key.auth)).status,
          (status) => status === 401,
          { timeoutMs: 30_000 },
        );
        expect(value).toBe(401);
        expect(
          (await second.http.get(`/v1/api-keys/${key.id}`).set(owner.auth).expect(200)).body,
        ).toMatchObject({
          status: 'revoked',
        });
      } finally {
        await second?.close();
        await dropTestDatabase(databaseUrl);
      }
    },
  );
});
