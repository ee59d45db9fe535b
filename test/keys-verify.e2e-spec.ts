import { Injectable, Module } from '@nestjs/common';
import type { Test } from 'supertest';
import type { AccessAttempt, AccessStep, StepOutcome } from '../src/access/access-attempt';
import { AccessDenial, defineAccessDenial } from '../src/access/access-denial';
import { AccessPolicy } from '../src/access/access-policy';
import { ApiKeyFormat } from '../src/api-keys/api-key-format';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { Auth, createKey, CreatedKey, pollUntil, sleep } from './support/keys';
import { oneConnection, OneConnection } from './support/one-connection';
import { startTestApp, TestApp } from './support/test-app';

/**
 * POST /v1/keys/verify (CONTRACT, "Verifying keys for other services"): a service of an organization
 * checks a key value its own caller presented. 200 for every outcome of that key, each with the code a
 * request with it would get here; 400 for a malformed body or permission query; 401/403 only for the
 * service's own credential.
 */

jest.setTimeout(60_000);

defineAccessDenial('customer_suspended', { status: 403, audited: true });

/**
 * An extension's access policy, as README "Extending" builds one: keys whose meta says their customer is
 * suspended are refused. It knows nothing of verify; the one key check applies it to both paths.
 */
@AccessPolicy()
@Injectable()
class SuspendedCustomerPolicy implements AccessStep {
  check({ request }: AccessAttempt): StepOutcome {
    if (request.principal?.key?.meta.suspended !== true) return undefined;
    return new AccessDenial('customer_suspended', "The key's customer is suspended.");
  }
}

@Module({ providers: [SuspendedCustomerPolicy] })
class SuspendedCustomerModule {}

type Json = Record<string, any>;

let t: TestApp;
let org: SignedUpOrganization;
let other: SignedUpOrganization;
/** The calling service: an api_manager key, which holds api_keys:verify. */
let service: CreatedKey;

beforeAll(async () => {
  t = await startTestApp({ imports: [SuspendedCustomerModule] });
  org = await signUpOrganization(t.http, 'Verifier');
  other = await signUpOrganization(t.http, 'Elsewhere');
  service = await createKey(t.http, org.auth, { name: 'gateway', role: 'api_manager' });
});
afterAll(() => t?.close());

const verifyKey = (body: Record<string, unknown>, auth: Auth = service.auth): Test =>
  t.http.post('/v1/keys/verify').set(auth).send(body);

/** A 200 answer's body, failing with the whole response otherwise. */
async function answer(body: Record<string, unknown>, auth?: Auth): Promise<Json> {
  const res = await verifyKey(body, auth);
  if (res.status !== 200) throw new Error(`verify answered ${res.status}: ${res.text}`);
  return res.body as Json;
}

/**
 * The contract's answer for a value that names no key: every field that would describe a key null, no
 * permissions. Written from the contract, not taken from the service (its unnamedAnswer), so that a
 * change to the service's answer fails here.
 */
const NAMES_NO_KEY = {
  valid: false,
  code: 'invalid_credentials',
  permissions: [],
  ...Object.fromEntries(
    ['key_id', 'name', 'identity', 'meta', 'credits_remaining', 'expires_at'].map((field) => [field, null]),
  ),
};

describe('a valid key', () => {
  it('is described: id, name, permissions, meta, no identity, no credits, no expiry', async () => {
    const key = await createKey(t.http, org.auth, {
      name: 'customer key',
      role: 'developer',
      meta: { plan: 'pro' },
    });
    const body = await answer({ key: key.key });
    expect(body).toEqual({
      valid: true,
      code: 'valid',
      key_id: key.id,
      name: 'customer key',
      identity: null,
      permissions: expect.arrayContaining(['agents:read', 'tasks:create']),
      meta: { plan: 'pro' },
      credits_remaining: null,
      expires_at: null,
    });
    expect(body.permissions).not.toContain('api_keys:verify');
    expect([...body.permissions].sort()).toEqual(body.permissions);
  });

  it('shows its identity (the customer it belongs to): id, external_id and meta', async () => {
    const identity = await t.http
      .post('/v1/identities')
      .set(org.auth)
      .send({ external_id: `cus_${Date.now()}`, meta: { plan: 'team' } })
      .expect(201);
    const key = await createKey(t.http, org.auth, { role: 'viewer', identity_id: identity.body.id });
    expect((await answer({ key: key.key })).identity).toEqual({
      id: identity.body.id,
      external_id: identity.body.external_id,
      meta: { plan: 'team' },
    });
  });

  it('shows its expiry', async () => {
    const expiration = new Date(Date.now() + 3_600_000).toISOString();
    const key = await createKey(t.http, org.auth, { role: 'viewer', expiration });
    expect(await answer({ key: key.key })).toMatchObject({ valid: true, expires_at: expiration });
  });

  it('may be checked with an access token of an administrator as well as with a service key', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer' });
    expect(await answer({ key: key.key }, org.auth)).toMatchObject({ valid: true, key_id: key.id });
  });
});

describe('permission queries', () => {
  let developer: CreatedKey;
  beforeAll(async () => {
    developer = await createKey(t.http, org.auth, { name: 'developer', role: 'developer' });
  });

  it('answers valid when the key satisfies the query, forbidden (naming the key) when not', async () => {
    expect(
      await answer({ key: developer.key, permissions: 'agents:read AND (tasks:create OR tasks:execute)' }),
    ).toMatchObject({ valid: true, code: 'valid' });
    expect(await answer({ key: developer.key, permissions: 'users:delete OR agents:read' })).toMatchObject({
      valid: true,
    });
    expect(await answer({ key: developer.key, permissions: 'agents:read AND users:delete' })).toMatchObject({
      valid: false,
      code: 'forbidden',
      key_id: developer.id,
      name: 'developer',
    });
  });

  it('binds AND tighter than OR', async () => {
    // users:delete OR (agents:read AND users:update): the developer holds agents:read only.
    expect(
      await answer({ key: developer.key, permissions: 'users:delete OR agents:read AND users:update' }),
    ).toMatchObject({ code: 'forbidden' });
    expect(
      await answer({ key: developer.key, permissions: '(users:delete OR agents:read) AND tasks:read' }),
    ).toMatchObject({ code: 'valid' });
  });

  it.each([
    ['an unknown permission', 'agents:read AND agents:fly', /unknown permission "agents:fly"/],
    ['a lowercase operator', 'agents:read and tasks:read', /write AND in capitals/],
    ['a dangling operator', 'agents:read OR', /expected a permission/],
    ['unbalanced parentheses', '(agents:read', /unbalanced/],
    ['an empty query', '', /empty/],
    ['a query over 1000 characters', `agents:read${' OR agents:read'.repeat(70)}`, /at most 1000/],
  ])('refuses %s with 400 invalid_permission_query, whatever the key', async (_, permissions, message) => {
    for (const key of [developer.key, 'sk_malformed']) {
      const res = await verifyKey({ key, permissions });
      expectProblem(res, 400, 'invalid_permission_query');
      expect(res.body.detail).toMatch(message);
    }
  });
});

describe('keys that are refused', () => {
  it('a value of the wrong shape: malformed_key, naming no key', async () => {
    expect(await answer({ key: 'sk_not-a-key' })).toEqual({ ...NAMES_NO_KEY, code: 'malformed_key' });
  });

  it('an unknown value: invalid_credentials, naming no key', async () => {
    expect(await answer({ key: new ApiKeyFormat('sk').generate() })).toEqual(NAMES_NO_KEY);
  });

  it('a deleted key: invalid_credentials, naming no key', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer' });
    await t.http.delete(`/v1/api-keys/${key.id}`).set(org.auth).expect(204);
    expect(await answer({ key: key.key })).toEqual(NAMES_NO_KEY);
  });

  it("another organization's key: invalid_credentials, naming no key and leaving it untouched", async () => {
    const theirs = await createKey(t.http, other.auth, { name: 'theirs', role: 'viewer' });
    expect(await answer({ key: theirs.key })).toEqual(NAMES_NO_KEY);
    // Not marked used, and not counted in its usage: the other organization sees nothing of it.
    await sleep(1_500);
    const shown = await t.http.get(`/v1/api-keys/${theirs.id}`).set(other.auth).expect(200);
    expect(shown.body.last_used_at).toBeNull();
    const usage = await t.http.get(`/v1/api-keys/${theirs.id}/usage`).set(other.auth).expect(200);
    expect(usage.body.data.reduce((sum: number, bucket: Json) => sum + bucket.requests, 0)).toBe(0);
    // Their own service still sees it as valid.
    const theirService = await createKey(t.http, other.auth, { role: 'api_manager' });
    expect(await answer({ key: theirs.key }, theirService.auth)).toMatchObject({
      valid: true,
      key_id: theirs.id,
    });
  });

  it('a disabled key: key_disabled, naming it', async () => {
    const key = await createKey(t.http, org.auth, { name: 'switched off', role: 'viewer' });
    await t.http.patch(`/v1/api-keys/${key.id}`).set(org.auth).send({ enabled: false }).expect(200);
    expect(await answer({ key: key.key })).toMatchObject({
      valid: false,
      code: 'key_disabled',
      key_id: key.id,
      name: 'switched off',
    });
  });

  it('a value replaced by a rotation without grace: key_revoked', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer' });
    const rotated = await t.http.post(`/v1/api-keys/${key.id}/rotate`).set(org.auth).send({}).expect(200);
    expect(await answer({ key: key.key })).toMatchObject({
      valid: false,
      code: 'key_revoked',
      key_id: key.id,
    });
    expect(await answer({ key: rotated.body.key })).toMatchObject({ valid: true, key_id: key.id });
  });

  it('an expired key: key_expired', async () => {
    const expiration = new Date(Date.now() + 2_000).toISOString();
    const key = await createKey(t.http, org.auth, { role: 'viewer', expiration });
    expect(await answer({ key: key.key })).toMatchObject({ valid: true });
    await sleep(Date.parse(expiration) - Date.now() + 100);
    expect(await answer({ key: key.key })).toMatchObject({
      valid: false,
      code: 'key_expired',
      key_id: key.id,
      expires_at: expiration,
    });
  });
});

describe('restrictions, checked against the address and referrer in the body', () => {
  it("allowed_ips: the body's ip decides, not the calling service's address; none given is refused", async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', allowed_ips: ['203.0.113.0/24'] });
    expect(await answer({ key: key.key })).toMatchObject({
      valid: false,
      code: 'ip_not_allowed',
      key_id: key.id,
    });
    expect(await answer({ key: key.key, ip: '198.51.100.1' })).toMatchObject({ code: 'ip_not_allowed' });
    expect(await answer({ key: key.key, ip: '127.0.0.1' })).toMatchObject({ code: 'ip_not_allowed' });
    expect(await answer({ key: key.key, ip: '203.0.113.7' })).toMatchObject({ valid: true, code: 'valid' });
  });

  it("allowed_referrers: the body's referrer decides; none given is refused", async () => {
    const key = await createKey(t.http, org.auth, {
      role: 'viewer',
      allowed_referrers: ['https://app.example.com/*'],
    });
    expect(await answer({ key: key.key })).toMatchObject({ code: 'referrer_not_allowed', key_id: key.id });
    expect(await answer({ key: key.key, referrer: 'https://evil.example.net/' })).toMatchObject({
      code: 'referrer_not_allowed',
    });
    // The calling service's own Referer header is not the caller's.
    const headerOnly = await verifyKey({ key: key.key }).set('Referer', 'https://app.example.com/page');
    expect(headerOnly.body).toMatchObject({ code: 'referrer_not_allowed' });
    expect(await answer({ key: key.key, referrer: 'https://app.example.com/page' })).toMatchObject({
      valid: true,
    });
  });

  it('a key without lists is valid with or without an ip and referrer', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer' });
    expect(await answer({ key: key.key })).toMatchObject({ valid: true });
    expect(await answer({ key: key.key, ip: '2001:db8::1', referrer: 'https://x.example/' })).toMatchObject({
      valid: true,
    });
  });
});

describe('rate limits', () => {
  it("a valid verify spends one request of the key's windows; past them: rate_limited", async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', rate_limit: { requests_per_minute: 2 } });
    const first = await verifyKey({ key: key.key }).expect(200);
    expect(first.body).toMatchObject({ valid: true });
    // The response's budget headers stay the calling service's own, not the verified key's.
    expect(first.headers['x-ratelimit-limit']).not.toBe('2');
    expect(await answer({ key: key.key })).toMatchObject({ valid: true });
    expect(await answer({ key: key.key })).toMatchObject({
      valid: false,
      code: 'rate_limited',
      key_id: key.id,
    });
    // The key's own requests share the windows.
    expectProblem(await t.http.get('/v1/auth/verify').set(key.auth), 429, 'rate_limited');
  });

  it("a refusal before the rate limit (restrictions, permissions) spends none of the key's windows", async () => {
    const key = await createKey(t.http, org.auth, {
      role: 'viewer',
      rate_limit: { requests_per_minute: 1 },
      allowed_ips: ['203.0.113.7'],
    });
    for (let i = 0; i < 3; i++)
      expect(await answer({ key: key.key })).toMatchObject({ code: 'ip_not_allowed' });
    for (let i = 0; i < 3; i++)
      expect(await answer({ key: key.key, ip: '203.0.113.7', permissions: 'users:delete' })).toMatchObject({
        code: 'forbidden',
      });
    expect(await answer({ key: key.key, ip: '203.0.113.7' })).toMatchObject({ valid: true });
    expect(await answer({ key: key.key, ip: '203.0.113.7' })).toMatchObject({ code: 'rate_limited' });
  });
});

describe("an extension's access policy", () => {
  it('refuses on verify what it refuses on the API, with the same code, spending nothing', async () => {
    const key = await createKey(t.http, org.auth, {
      role: 'viewer',
      meta: { suspended: true },
      credits: { remaining: 3 },
      rate_limit: { requests_per_minute: 1 },
    });
    expectProblem(await t.http.get('/v1/auth/verify').set(key.auth), 403, 'customer_suspended');
    for (let i = 0; i < 2; i++) {
      expect(await answer({ key: key.key })).toMatchObject({
        valid: false,
        code: 'customer_suspended',
        key_id: key.id,
        credits_remaining: 3,
      });
    }
    // Refused before the rate limit and credits: neither was spent, by the request or the verifies.
    await t.http
      .patch(`/v1/api-keys/${key.id}`)
      .set(org.auth)
      .send({ meta: { suspended: false } })
      .expect(200);
    const { value } = await pollUntil(
      () => answer({ key: key.key }),
      (body) => body.code !== 'customer_suspended',
    );
    expect(value).toMatchObject({ valid: true, credits_remaining: 2 });
  });

  it('lets a key it does not refuse through on both paths', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', meta: { suspended: 'no' } });
    await t.http.get('/v1/auth/verify').set(key.auth).expect(200);
    expect(await answer({ key: key.key })).toMatchObject({ valid: true, code: 'valid' });
  });
});

describe('credits', () => {
  it('spends cost credits (default 1) all or none, and shows the balance left', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 6 } });
    expect(await answer({ key: key.key })).toMatchObject({ valid: true, credits_remaining: 5 });
    expect(await answer({ key: key.key, cost: 3 })).toMatchObject({ valid: true, credits_remaining: 2 });
    // Three more than the balance: none spent.
    expect(await answer({ key: key.key, cost: 3 })).toMatchObject({
      valid: false,
      code: 'credits_exhausted',
      key_id: key.id,
      credits_remaining: 2,
    });
    // Cost 0 checks the key and spends nothing.
    expect(await answer({ key: key.key, cost: 0 })).toMatchObject({ valid: true, credits_remaining: 2 });
    expect(await answer({ key: key.key, cost: 2 })).toMatchObject({ valid: true, credits_remaining: 0 });
    expect(await answer({ key: key.key })).toMatchObject({ code: 'credits_exhausted', credits_remaining: 0 });
    const shown = await t.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200);
    expect(shown.body.credits).toMatchObject({ remaining: 0 });
  });

  it('spends exactly the balance under concurrent verifies, each all or none with its own balance left', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 7 } });
    const answers = await Promise.all(Array.from({ length: 6 }, () => answer({ key: key.key, cost: 2 })));
    const granted = answers.filter((body) => body.valid);
    expect(granted.map((body) => body.credits_remaining).sort()).toEqual([1, 3, 5]);
    expect(answers.filter((body) => !body.valid).map((body) => body.code)).toEqual(
      Array(3).fill('credits_exhausted'),
    );
    expect(await answer({ key: key.key })).toMatchObject({ valid: true, credits_remaining: 0 });
    const shown = await t.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200);
    expect(shown.body.credits).toMatchObject({ remaining: 0 });
  });

  it('a refusal before credits spends none', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 2 } });
    expect(await answer({ key: key.key, permissions: 'users:delete', cost: 2 })).toMatchObject({
      code: 'forbidden',
      credits_remaining: 2,
    });
    expect(await answer({ key: key.key, cost: 2 })).toMatchObject({ valid: true, credits_remaining: 0 });
  });

  it('a key without credits is valid whatever the cost', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer' });
    expect(await answer({ key: key.key, cost: 1000 })).toMatchObject({
      valid: true,
      credits_remaining: null,
    });
  });
});

describe('usage', () => {
  it("counts verifies in the verified key's usage: outcomes and credits spent", async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 10 } });
    expect(await answer({ key: key.key, cost: 4 })).toMatchObject({ valid: true });
    expect(await answer({ key: key.key, permissions: 'users:delete' })).toMatchObject({ code: 'forbidden' });
    // Summed over the series: the two requests may fall either side of a bucket's end, and the series
    // may end in a newer, empty bucket.
    const { value: total } = await pollUntil(
      async () => {
        const { data } = (await t.http.get(`/v1/api-keys/${key.id}/usage`).set(org.auth).expect(200))
          .body as Json;
        return sumBuckets(data as Json[]);
      },
      (sum) => sum.requests >= 2,
    );
    expect(total).toMatchObject({
      requests: 2,
      allowed: 1,
      denied: 1,
      denied_by_reason: { forbidden: 1 },
      credits_spent: 4,
    });
  });
});

describe('audit', () => {
  it("records a refusal in the verified key's audit log as key.denied, from the caller's address", async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', allowed_ips: ['203.0.113.0/24'] });
    expect(await answer({ key: key.key, ip: '198.51.100.7' })).toMatchObject({ code: 'ip_not_allowed' });
    expect(await answer({ key: key.key, ip: '203.0.113.9', permissions: 'users:delete' })).toMatchObject({
      code: 'forbidden',
    });
    // A valid verify is no refusal: nothing more is recorded.
    expect(await answer({ key: key.key, ip: '203.0.113.9' })).toMatchObject({ valid: true });
    const { value } = await pollUntil(
      async () =>
        (
          (await t.http.get(`/v1/api-keys/${key.id}/audit-log`).set(org.auth).expect(200)).body.data as Json[]
        ).filter((entry) => entry.action === 'key.denied'),
      (entries) => entries.length >= 2,
      { timeoutMs: 5_000 },
    );
    expect(value.map((entry) => entry.details.reason).sort()).toEqual(['forbidden', 'ip_not_allowed']);
    const refused = value.find((entry) => entry.details.reason === 'ip_not_allowed')!;
    expect(refused).toMatchObject({
      actor: { type: 'api_key', id: key.id },
      ip: '198.51.100.7',
      details: { reason: 'ip_not_allowed', verified_by: service.id },
    });
  });
});

describe('the calling credential', () => {
  it('needs api_keys:verify: a developer key or a viewer is refused with 403', async () => {
    const target = await createKey(t.http, org.auth, { role: 'viewer' });
    const developer = await createKey(t.http, org.auth, { role: 'developer' });
    expectProblem(await verifyKey({ key: target.key }, developer.auth), 403, 'forbidden');
    const viewer = await createKey(t.http, org.auth, { role: 'viewer' });
    expectProblem(await verifyKey({ key: target.key }, viewer.auth), 403, 'forbidden');
  });

  it('is still refused with 401 when missing or invalid', async () => {
    expectProblem(
      await t.http.post('/v1/keys/verify').send({ key: service.key }),
      401,
      'missing_credentials',
    );
    expectProblem(
      await verifyKey({ key: service.key }, { Authorization: `Bearer ${new ApiKeyFormat('sk').generate()}` }),
      401,
      'invalid_credentials',
    );
  });
});

describe('one kept-alive connection', () => {
  // The service's socket remembers the last value it verified and its hash (ApiKeyResolver): every
  // request here travels on one socket, so each answer shows that only the hash of that same value is
  // reused, and that the key is still resolved (and found deleted) on every request.
  let connection: OneConnection;
  beforeAll(async () => {
    connection = await oneConnection(t.app);
  });
  afterAll(() => connection?.close());

  const verifyOnConnection = async (key: string): Promise<Json> => {
    const headers = { ...service.auth, 'content-type': 'application/json' };
    const res = await connection.request('POST', '/v1/keys/verify', headers, JSON.stringify({ key }));
    if (res.status !== 200) throw new Error(`verify answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body;
  };

  it('answers each value for itself, and sees a key deleted between two requests', async () => {
    const mine = await createKey(t.http, org.auth, { name: 'on one socket', role: 'developer' });
    const theirs = await createKey(t.http, other.auth, { name: 'elsewhere', role: 'developer' });
    const answers = [
      await verifyOnConnection(mine.key),
      await verifyOnConnection(mine.key),
      await verifyOnConnection(theirs.key),
      // Its last character changed (to one it is not: a key may end in x): the checksum fails.
      await verifyOnConnection(`${mine.key.slice(0, -1)}${mine.key.endsWith('x') ? 'y' : 'x'}`),
      await verifyOnConnection(mine.key),
    ];
    expect(answers.map((a) => [a.code, a.key_id])).toEqual([
      ['valid', mine.id],
      ['valid', mine.id],
      ['invalid_credentials', null],
      ['malformed_key', null],
      ['valid', mine.id],
    ]);
    expect((await t.http.delete(`/v1/api-keys/${mine.id}`).set(org.auth)).status).toBe(204);
    expect(await verifyOnConnection(mine.key)).toEqual(NAMES_NO_KEY);
    expect(connection.sockets()).toBe(1);
  });
});

describe('bad bodies', () => {
  it.each([
    ['no key', {}],
    ['a key that is not a string', { key: 42 }],
    ['a negative cost', { key: 'sk_x', cost: -1 }],
    ['a cost above 1000', { key: 'sk_x', cost: 1001 }],
    ['a fractional cost', { key: 'sk_x', cost: 1.5 }],
    ['an ip that is not an address', { key: 'sk_x', ip: '203.0.113.0/24' }],
    ['an unknown field', { key: 'sk_x', scope: 'all' }],
    ['a query that is not a string', { key: 'sk_x', permissions: ['agents:read'] }],
  ])('%s: 400', async (_, body) => {
    const res = await verifyKey(body);
    expect(res.status).toBe(400);
  });
});

/** A usage series' counts added up: requests, outcomes, refusals by reason and credits spent. */
function sumBuckets(buckets: Json[]): Json {
  const total: Json = { requests: 0, allowed: 0, denied: 0, denied_by_reason: {}, credits_spent: 0 };
  for (const bucket of buckets) {
    for (const field of ['requests', 'allowed', 'denied', 'credits_spent']) total[field] += bucket[field];
    for (const [reason, count] of Object.entries(bucket.denied_by_reason as Record<string, number>))
      total.denied_by_reason[reason] = (total.denied_by_reason[reason] ?? 0) + count;
  }
  return total;
}
