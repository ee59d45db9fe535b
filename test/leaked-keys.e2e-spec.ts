import { createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { ApiKeyFormat } from '../src/api-keys/api-key-format';
import { expectProblem, SignedUpOrganization, signUpOrganization } from './support/factories';
import { Auth, createKey, CreatedKey, pollUntil } from './support/keys';
import { CALLS_LOCAL_TARGETS } from './support/outbound-targets';
import { startTestApp, TestApp } from './support/test-app';
import { WebhookReceiver } from './support/webhook-receiver';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const TOKEN_TYPE = 'gatehouse_api_key';

// GitHub's published sample (secret scanning partner program): its key served beside the test's own.
const SAMPLE = {
  keyIdentifier: 'bcb53661c06b4728e59d897fb6165d5c9cda0fd9cdf9d09ead458168deb7518c',
  publicKey:
    '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEYAGMWO8XgCamYKMJS6jc/qgvSlAdAjPuDPRcXU22YxgBrz+zoN19MzuRyW87qEt9/AmtoNP5GrobzUvQSyJFVw==\n-----END PUBLIC KEY-----\n',
  body: '[{"source":"commit","token":"some_token","type":"some_type","url":"https://example.com/base-repo-url/"}]',
  signature:
    'MEQCIQDaMKqrGnE27S0kgMrEK0eYBmyG0LeZismAEz/BgZyt7AIfXt9fErtRS4XaeSt/AO1RtBY66YcAdjxji410VQV4xg==',
};

interface SigningKey {
  identifier: string;
  privateKey: KeyObject;
  publicPem: string;
}

function newSigningKey(identifier: string): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { identifier, privateKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }) as string };
}

const signatureOf = (body: string, key: SigningKey): string =>
  sign('sha256', Buffer.from(body), { key: key.privateKey, dsaEncoding: 'der' }).toString('base64');

const sha256 = (value: string): string => createHash('sha256').update(value).digest('hex');

let urlCounter = 0;
const newUrl = (): string => `https://github.com/acme/app/blob/${++urlCounter}/config.py`;

interface Reported {
  token: string;
  url?: string | null;
  type?: string;
}

/**
 * GitHub's secret-scanning reports over HTTP, signed by a key pair made here and served by a local
 * public-keys document; the public revocation endpoint; each organization's leak_response.
 */
describe('leaked keys', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let a: SignedUpOrganization;
  let current: SigningKey;
  let published: SigningKey[];

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    current = newSigningKey('test-key-1');
    published = [current];
    receiver.script('/public-keys', () => ({
      status: 200,
      json: {
        public_keys: [
          ...published.map((key) => ({
            key_identifier: key.identifier,
            key: key.publicPem,
            is_current: true,
          })),
          { key_identifier: SAMPLE.keyIdentifier, key: SAMPLE.publicKey, is_current: false },
        ],
      },
    }));
    t = await startTestApp({
      env: {
        SECRET_SCANNING_KEYS_URL: receiver.url('/public-keys'),
        // Each revoke test speaks from its own address (X-Forwarded-For, one trusted hop).
        TRUST_PROXY: '1',
        CREDENTIAL_REVOKE_REQUESTS_PER_MINUTE: '5',
        ...CALLS_LOCAL_TARGETS,
        WEBHOOK_WORKERS: '1',
      },
    });
    a = await signUpOrganization(t.http, 'Leaks A');
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const bodyOf = (tokens: Reported[]): string =>
    JSON.stringify(
      tokens.map(({ token, url, type }) => ({
        token,
        type: type ?? TOKEN_TYPE,
        url: url === undefined ? newUrl() : url,
        source: 'commit',
      })),
    );

  const postReport = (body: string, headers: Record<string, string>) =>
    t.http.post('/v1/secret-scanning/github').set('Content-Type', 'application/json').set(headers).send(body);

  const report = (tokens: Reported[], key: SigningKey = current) => {
    const body = bodyOf(tokens);
    return postReport(body, {
      'Github-Public-Key-Identifier': key.identifier,
      'Github-Public-Key-Signature': signatureOf(body, key),
    });
  };

  const getKey = async (auth: Auth, id: string) =>
    (await t.http.get(`/v1/api-keys/${id}`).set(auth).expect(200)).body;

  const auditOf = async (auth: Auth, id: string) =>
    (await t.http.get(`/v1/api-keys/${id}/audit-log?limit=100`).set(auth).expect(200)).body.data as any[];

  const leakedEntries = async (auth: Auth, id: string) =>
    (await auditOf(auth, id)).filter((entry) => entry.action === 'key.leaked');

  const setLeakResponse = (org: SignedUpOrganization, leak_response: string) =>
    t.http.patch('/v1/organization/policies').set(org.auth).send({ leak_response }).expect(200);

  const use = (key: CreatedKey) => t.http.get('/v1/auth/verify').set(key.auth);

  describe('the signature', () => {
    let key: CreatedKey;
    let body: string;

    beforeAll(async () => {
      key = await createKey(t.http, a.auth, { name: 'signature target', role: 'viewer' });
      body = bodyOf([{ token: key.key }]);
    });

    const expectUntouched = async () => {
      const after = await getKey(a.auth, key.id);
      expect({ status: after.status, enabled: after.enabled, leaked_at: after.leaked_at }).toEqual({
        status: 'active',
        enabled: true,
        leaked_at: null,
      });
      expect(await leakedEntries(a.auth, key.id)).toEqual([]);
      await use(key).expect(200);
    };

    it.each([
      ['no headers', {}],
      ['no signature', { 'Github-Public-Key-Identifier': 'test-key-1' }],
      ['no identifier', { 'Github-Public-Key-Signature': 'MEUCIQ==' }],
    ])('refuses a report with %s: 401 invalid_signature, nothing happens', async (_label, headers) => {
      expectProblem(await postReport(body, headers), 401, 'invalid_signature');
      await expectUntouched();
    });

    it('refuses a report signed by an identifier GitHub does not publish', async () => {
      const stranger = newSigningKey('not-published');
      const res = await postReport(body, {
        'Github-Public-Key-Identifier': stranger.identifier,
        'Github-Public-Key-Signature': signatureOf(body, stranger),
      });
      expectProblem(res, 401, 'invalid_signature');
      await expectUntouched();
    });

    it('refuses a bad signature: another body, another key, garbage', async () => {
      const forger = newSigningKey(current.identifier);
      for (const signature of [
        signatureOf(bodyOf([{ token: key.key }]), current), // another URL: another body
        signatureOf(body, forger), // the published identifier, another private key
        'bm90IGEgc2lnbmF0dXJl',
        '%%%',
      ]) {
        const res = await postReport(body, {
          'Github-Public-Key-Identifier': current.identifier,
          'Github-Public-Key-Signature': signature,
        });
        expectProblem(res, 401, 'invalid_signature');
      }
      // The body signed, then changed by one character (the same JSON with a space).
      const signature = signatureOf(body, current);
      const res = await postReport(body.replace('[{', '[ {'), {
        'Github-Public-Key-Identifier': current.identifier,
        'Github-Public-Key-Signature': signature,
      });
      expectProblem(res, 401, 'invalid_signature');
      await expectUntouched();
    });

    it("verifies GitHub's published sample over the raw body, and labels its token a false positive", async () => {
      const res = await postReport(SAMPLE.body, {
        'Github-Public-Key-Identifier': SAMPLE.keyIdentifier,
        'Github-Public-Key-Signature': SAMPLE.signature,
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual([
        { token_hash: sha256('some_token'), token_type: 'some_type', label: 'false_positive' },
      ]);
      // The same bytes re-serialised are not what GitHub signed.
      const spaced = JSON.stringify(JSON.parse(SAMPLE.body), null, 2);
      expectProblem(
        await postReport(spaced, {
          'Github-Public-Key-Identifier': SAMPLE.keyIdentifier,
          'Github-Public-Key-Signature': SAMPLE.signature,
        }),
        401,
        'invalid_signature',
      );
    });

    it('reads the keys again for an unknown identifier (GitHub rotated), but at most once a minute for misses', async () => {
      const rotated = newSigningKey('test-key-2');
      published = [current, rotated];
      const target = await createKey(t.http, a.auth, { name: 'rotation target', role: 'viewer' });
      await setLeakResponse(a, 'notify');
      const fetchesBefore = receiver.at('/public-keys').length;
      const res = await report([{ token: target.key }], rotated);
      expect(res.status).toBe(200);
      expect(res.body[0].label).toBe('true_positive');
      expect(receiver.at('/public-keys').length).toBe(fetchesBefore + 1);

      // A flood of made-up identifiers: the miss above was the fetch of this minute.
      for (let i = 0; i < 10; i += 1) {
        const made = newSigningKey(`made-up-${i}`);
        const flooded = bodyOf([{ token: target.key }]);
        const refused = await postReport(flooded, {
          'Github-Public-Key-Identifier': made.identifier,
          'Github-Public-Key-Signature': signatureOf(flooded, made),
        });
        expectProblem(refused, 401, 'invalid_signature');
      }
      expect(receiver.at('/public-keys').length).toBe(fetchesBefore + 1);
      await setLeakResponse(a, 'revoke');
    });
  });

  describe('reports', () => {
    it('revokes an active key (the default leak_response): true_positive, key.leaked, leaked_at, a 401 that says why', async () => {
      const key = await createKey(t.http, a.auth, { name: 'leaky', role: 'viewer' });
      await use(key).expect(200); // in the key cache: the revocation must reach it
      const url = newUrl();
      const res = await report([{ token: key.key, url }]);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([
        { token_hash: sha256(key.key), token_type: TOKEN_TYPE, label: 'true_positive' },
      ]);

      const after = await getKey(a.auth, key.id);
      expect(after.status).toBe('revoked');
      expect(after.leaked_at).toMatch(ISO);
      const refused = expectProblem(await use(key), 401, 'key_revoked');
      expect(refused.detail).toMatch(/leaked/);

      const audit = await auditOf(a.auth, key.id);
      expect(audit.filter((entry) => entry.action === 'key.leaked')).toEqual([
        expect.objectContaining({
          actor: { type: 'system', id: null },
          details: { source: 'github', url, action_taken: 'revoked' },
        }),
      ]);
      expect(audit.find((entry) => entry.action === 'key.revoked')?.details).toEqual({ reason: 'leaked' });
    });

    it('records an inactive key (disabled, revoked) without changing it; a deleted key names nothing', async () => {
      const disabled = await createKey(t.http, a.auth, { name: 'off', role: 'viewer', enabled: false });
      const revoked = await createKey(t.http, a.auth, { name: 'revoked', role: 'viewer' });
      await report([{ token: revoked.key }]); // revoked by this first report
      const deleted = await createKey(t.http, a.auth, { name: 'gone', role: 'viewer' });
      await t.http.delete(`/v1/api-keys/${deleted.id}`).set(a.auth).expect(204);

      const res = await report([{ token: disabled.key }, { token: revoked.key }, { token: deleted.key }]);
      expect(res.status).toBe(200);
      expect(res.body.map((entry: any) => entry.label)).toEqual([
        'true_positive',
        'true_positive',
        'false_positive',
      ]);
      const offNow = await getKey(a.auth, disabled.id);
      expect({ status: offNow.status, leaked_at: offNow.leaked_at }).toEqual({
        status: 'disabled',
        leaked_at: expect.stringMatching(ISO),
      });
      expect((await leakedEntries(a.auth, disabled.id)).map((entry) => entry.details.action_taken)).toEqual([
        'none',
      ]);
      expect(
        (await leakedEntries(a.auth, revoked.id)).map((entry) => entry.details.action_taken).sort(),
      ).toEqual(['none', 'revoked']);
      expectProblem(await t.http.get(`/v1/api-keys/${deleted.id}`).set(a.auth), 404);
    });

    it('labels a foreign string and a well-formed value that names no key false_positive, and keys of any organization true_positive', async () => {
      const b = await signUpOrganization(t.http, 'Leaks B');
      const theirs = await createKey(t.http, b.auth, { name: 'B key', role: 'viewer' });
      const unknown = new ApiKeyFormat('sk').generate();
      const res = await report([
        { token: 'ghp_notours0123456789', type: 'other_type' },
        { token: unknown },
        { token: theirs.key },
      ]);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([
        { token_hash: sha256('ghp_notours0123456789'), token_type: 'other_type', label: 'false_positive' },
        { token_hash: sha256(unknown), token_type: TOKEN_TYPE, label: 'false_positive' },
        { token_hash: sha256(theirs.key), token_type: TOKEN_TYPE, label: 'true_positive' },
      ]);
      expect((await getKey(b.auth, theirs.id)).status).toBe('revoked');
    });

    it('applies each leak_response: disable switches the key off, notify changes nothing', async () => {
      const org = await signUpOrganization(t.http, 'Leak responses');
      await setLeakResponse(org, 'disable');
      const toDisable = await createKey(t.http, org.auth, { name: 'disable me', role: 'viewer' });
      await use(toDisable).expect(200);
      await report([{ token: toDisable.key }]);
      const disabled = await getKey(org.auth, toDisable.id);
      expect({ status: disabled.status, enabled: disabled.enabled }).toEqual({
        status: 'disabled',
        enabled: false,
      });
      expectProblem(await use(toDisable), 401, 'key_disabled');
      expect((await leakedEntries(org.auth, toDisable.id))[0].details.action_taken).toBe('disabled');
      // An operator who has looked into it can switch it back on.
      await t.http.patch(`/v1/api-keys/${toDisable.id}`).set(org.auth).send({ enabled: true }).expect(200);
      await use(toDisable).expect(200);

      await setLeakResponse(org, 'notify');
      const toNotify = await createKey(t.http, org.auth, { name: 'notify me', role: 'viewer' });
      await report([{ token: toNotify.key }]);
      const notified = await getKey(org.auth, toNotify.id);
      expect({ status: notified.status, leaked_at: notified.leaked_at }).toEqual({
        status: 'active',
        leaked_at: expect.stringMatching(ISO),
      });
      await use(toNotify).expect(200);
      expect((await leakedEntries(org.auth, toNotify.id))[0].details.action_taken).toBe('none');
    });

    it('is idempotent per key and source URL: the same report twice records key.leaked once', async () => {
      const org = await signUpOrganization(t.http, 'Leak idempotence');
      await setLeakResponse(org, 'notify');
      const key = await createKey(t.http, org.auth, { name: 'reported twice', role: 'viewer' });
      const url = newUrl();
      const first = await report([{ token: key.key, url }]);
      const leakedAt = (await getKey(org.auth, key.id)).leaked_at;
      const again = await report([
        { token: key.key, url },
        { token: key.key, url },
      ]);
      expect(again.body).toEqual([first.body[0], first.body[0]]);
      expect(await leakedEntries(org.auth, key.id)).toHaveLength(1);
      expect((await getKey(org.auth, key.id)).leaked_at).toBe(leakedAt);
      // Found somewhere else: recorded again, with that URL.
      const elsewhere = newUrl();
      await report([{ token: key.key, url: elsewhere }]);
      expect((await leakedEntries(org.auth, key.id)).map((entry) => entry.details.url)).toEqual([
        elsewhere,
        url,
      ]);
    });

    it('refuses a signed body that is not a report (400) and answers an empty one with []', async () => {
      const signedBody = (body: string) =>
        postReport(body, {
          'Github-Public-Key-Identifier': current.identifier,
          'Github-Public-Key-Signature': signatureOf(body, current),
        });
      expectProblem(await signedBody('{"token":"x"}'), 400, 'validation_failed');
      expectProblem(await signedBody('[{"token":42,"type":"t"}]'), 400, 'validation_failed');
      expect((await signedBody('[]').expect(200)).body).toEqual([]);
    });

    it('answers a report of 3,000 tokens, each labelled, in one lookup', async () => {
      const org = await signUpOrganization(t.http, 'Leak batch');
      await setLeakResponse(org, 'notify');
      const keys = await Promise.all(
        [1, 2, 3].map((i) => createKey(t.http, org.auth, { name: `batch ${i}`, role: 'viewer' })),
      );
      const format = new ApiKeyFormat('sk');
      const tokens: Reported[] = Array.from({ length: 3000 }, (_, i) => ({
        token: i % 1000 === 7 ? keys[Math.floor(i / 1000)].key : format.generate(),
        url: `https://github.com/acme/batch/blob/main/${i}.env`,
      }));
      const res = await report(tokens);
      expect(res.status).toBe(200);
      expect(res.body).toHaveLength(3000);
      const positives = res.body.flatMap((entry: any, i: number) =>
        entry.label === 'true_positive' ? [i] : [],
      );
      expect(positives).toEqual([7, 1007, 2007]);
      for (const key of keys) expect(await leakedEntries(org.auth, key.id)).toHaveLength(1);
    });
  });

  describe('the key.leaked webhook', () => {
    it('is delivered with {key_id, source, url, action_taken}', async () => {
      const org = await signUpOrganization(t.http, 'Leak webhook');
      const path = '/leak-hook';
      await t.http
        .post('/v1/webhooks')
        .set(org.auth)
        .send({ url: receiver.url(path), events: ['key.leaked'] })
        .expect(201);
      const key = await createKey(t.http, org.auth, { name: 'hooked', role: 'viewer' });
      const url = newUrl();
      await report([{ token: key.key, url }]).expect(200);
      await t.http
        .post('/v1/credentials/revoke')
        .set('X-Forwarded-For', '198.51.100.90')
        .send({ credentials: [key.key] })
        .expect(202);
      const { value: received } = await pollUntil(
        async () => receiver.at(path),
        (entries) => entries.length >= 2,
      );
      // Deliveries are concurrent: the order they arrive in is not the order of the reports.
      const bySource = received
        .map((entry) => entry.json)
        .sort((x, y) => (x.data.source === 'github' ? -1 : 1) - (y.data.source === 'github' ? -1 : 1));
      expect(bySource).toEqual([
        {
          type: 'key.leaked',
          timestamp: expect.stringMatching(ISO),
          data: expect.objectContaining({ key_id: key.id, source: 'github', url, action_taken: 'revoked' }),
        },
        {
          type: 'key.leaked',
          timestamp: expect.stringMatching(ISO),
          data: expect.objectContaining({
            key_id: key.id,
            source: 'public_report',
            url: null,
            action_taken: 'none',
          }),
        },
      ]);
    });
  });

  describe('POST /v1/credentials/revoke', () => {
    let address = 0;
    const from = () => `198.51.100.${++address}`;
    const revoke = (credentials: unknown, ip = from()) =>
      t.http.post('/v1/credentials/revoke').set('X-Forwarded-For', ip).send({ credentials });
    const revokedInTime = async (key: CreatedKey) => {
      const { value } = await pollUntil(
        async () => (await use(key)).status,
        (status) => status === 401,
        { timeoutMs: 30_000 },
      );
      expect(value).toBe(401);
    };

    it('answers 202 alike for a real key, garbage and a well-formed unknown value; the real key gets its leak_response', async () => {
      const key = await createKey(t.http, a.auth, { name: 'found on a forum', role: 'viewer' });
      const answers = await Promise.all([
        revoke([key.key]),
        revoke(['hello']),
        revoke([new ApiKeyFormat('sk').generate()]),
      ]);
      expect(answers.map((res) => [res.status, res.body])).toEqual([
        [202, { received: 1 }],
        [202, { received: 1 }],
        [202, { received: 1 }],
      ]);
      // Applied after the answer (off the request): wait for it.
      await revokedInTime(key);
      expect((await getKey(a.auth, key.id)).status).toBe('revoked');
      expect((await leakedEntries(a.auth, key.id)).map((entry) => entry.details)).toEqual([
        { source: 'public_report', url: null, action_taken: 'revoked' },
      ]);
      expectProblem(await use(key), 401, 'key_revoked');
      // Reported again: the same answer, nothing recorded twice. Reports are applied in the order they
      // came, so once a key reported after it is revoked, this report has been applied too.
      expect((await revoke([key.key, key.key])).status).toBe(202);
      const later = await createKey(t.http, a.auth, { role: 'viewer' });
      expect((await revoke([later.key])).status).toBe(202);
      await revokedInTime(later);
      expect(await leakedEntries(a.auth, key.id)).toHaveLength(1);
    });

    it.each([
      ['no credentials', {}],
      ['an empty list', { credentials: [] }],
      ['more than 1000', { credentials: Array.from({ length: 1001 }, (_, i) => `v${i}`) }],
      ['a number', { credentials: [42] }],
      ['a string', { credentials: 'sk_x' }],
    ])('refuses %s (400) and changes nothing', async (_label, body) => {
      const res = await t.http.post('/v1/credentials/revoke').set('X-Forwarded-For', from()).send(body);
      expectProblem(res, 400, 'validation_failed');
    });

    it('takes 1000 values at once', async () => {
      const values = Array.from({ length: 1000 }, () => new ApiKeyFormat('sk').generate());
      expect((await revoke(values)).body).toEqual({ received: 1000 });
    });

    it('limits each client address (429 with Retry-After); another address is not limited', async () => {
      const ip = from();
      for (let i = 0; i < 5; i += 1) expect((await revoke(['x'], ip)).status).toBe(202);
      const limited = await revoke(['x'], ip);
      expectProblem(limited, 429, 'too_many_revoke_requests');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect((await revoke(['x'])).status).toBe(202);
    });
  });
});
