import { generateKeyPairSync, sign } from 'node:crypto';
import type TestAgent from 'supertest/lib/agent';
import { expectProblem, SignedUpOrganization, signUpOrganization } from './support/factories';
import { describeWithPostgres, expectWithinOneSecond, sharedSecrets } from './support/instances';
import { Auth, createKey, pollUntil } from './support/keys';
import { dropTestDatabase, startTestApp, TestApp } from './support/test-app';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * A leak reported to one instance, A, revokes the key on every instance: B refuses it (401 key_revoked,
 * saying why) within a second, whether the report is GitHub's (signed by a key pair made here, its public
 * key served by a local public-keys document) or anyone's public revocation. Needs PostgreSQL: PGlite is a
 * single-process database.
 */

const REVOKED_DETAIL =
  'The API key has been revoked because it was reported leaked (found in public); create a new key.';

const verify = (http: TestAgent, auth: Auth) => http.get('/v1/auth/verify').set(auth);

describeWithPostgres('leaked-keys multi-instance e2e')(
  'leaked keys on two instances (needs PostgreSQL)',
  () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    let receiver: WebhookReceiver;
    let a: TestApp;
    let b: TestApp;
    let org: SignedUpOrganization;
    let databaseUrl: string | undefined;

    beforeAll(async () => {
      receiver = await WebhookReceiver.start();
      receiver.script('/public-keys', () => ({
        status: 200,
        json: {
          public_keys: [
            {
              key_identifier: 'two-instances',
              key: publicKey.export({ type: 'spki', format: 'pem' }),
              is_current: true,
            },
          ],
        },
      }));
      const env = { ...sharedSecrets(), SECRET_SCANNING_KEYS_URL: receiver.url('/public-keys') };
      a = await startTestApp({ env });
      databaseUrl = a.databaseUrl;
      b = await startTestApp({ databaseUrl, env });
      org = await signUpOrganization(a.http, 'Leaks on two');
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
      if (databaseUrl) await dropTestDatabase(databaseUrl);
      await receiver?.close();
    });

    /**
     * B serves the key (and caches it), then A takes the report `send`; B refuses it within a second of
     * the revocation. A GitHub report is applied before its answer; a public one after (202: the work
     * is the same for every value, so the answer tells nothing), so its second starts once A shows the
     * key revoked: the contract's second is the revocation's, reaching every instance.
     */
    async function expectRevokedOnB(
      send: (token: string) => PromiseLike<unknown>,
      appliedAfterAnswer = false,
    ): Promise<void> {
      const key = await createKey(a.http, org.auth, { role: 'viewer' });
      await verify(b.http, key.auth).expect(200);

      await send(key.key);
      if (appliedAfterAnswer) {
        await pollUntil(
          () => a.http.get(`/v1/api-keys/${key.id}`).set(org.auth),
          (res) => res.body.status === 'revoked',
          { timeoutMs: 60_000, intervalMs: 20 },
        );
      }
      const refused = await expectWithinOneSecond(
        () => verify(b.http, key.auth),
        (res) => res.status === 401,
      );
      expect(expectProblem(refused, 401, 'key_revoked')).toMatchObject({ detail: REVOKED_DETAIL });
      expect((await b.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200)).body).toMatchObject({
        status: 'revoked',
        leaked_at: expect.any(String),
      });
    }

    it('a GitHub report received by A: B refuses the key within a second', async () => {
      await expectRevokedOnB(async (token) => {
        const body = JSON.stringify([
          {
            token,
            type: 'gatehouse_api_key',
            url: 'https://github.com/acme/app/blob/main/.env',
            source: 'commit',
          },
        ]);
        const signature = sign('sha256', Buffer.from(body), { key: privateKey, dsaEncoding: 'der' });
        const res = await a.http
          .post('/v1/secret-scanning/github')
          .set('Content-Type', 'application/json')
          .set('Github-Public-Key-Identifier', 'two-instances')
          .set('Github-Public-Key-Signature', signature.toString('base64'))
          .send(body)
          .expect(200);
        expect(res.body).toEqual([expect.objectContaining({ label: 'true_positive' })]);
      });
    });

    it('a public revocation received by A: B refuses the key within a second of its revocation', async () => {
      await expectRevokedOnB(async (token) => {
        const res = await a.http
          .post('/v1/credentials/revoke')
          .send({ credentials: [token] })
          .expect(202);
        expect(res.body).toEqual({ received: 1 });
      }, true);
    });
  },
);
