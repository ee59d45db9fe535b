import type TestAgent from 'supertest/lib/agent';
import { expectProblem, SignedUpOrganization, signUpOrganization } from './support/factories';
import { Auth, createKey, CreatedKey, pollUntil } from './support/keys';
import { ManualClock } from './support/manual-clock';
import { startTestApp, TestApp } from './support/test-app';

/**
 * An identity's shared rate limit and credits (CONTRACT, "Identities"): every key of the identity
 * spends them beside its own, a request fits both or is refused saying which (`scope`), and spends from
 * both balances or neither; refills, top-ups and `identity.credits_low` as for keys; a task reserves
 * from the identity too; verify shows the identity's balance when the key has none.
 */

// 2026-03-10 15:30 UTC: a daily refill is due at 2026-03-11 00:00.
const clock = new ManualClock(Date.parse('2026-03-10T15:30:00Z'));

let t: TestApp;
let org: SignedUpOrganization;
let counter = 0;

beforeAll(async () => {
  t = await startTestApp({ clock });
  org = await signUpOrganization(t.http, 'Identity limits');
});
afterAll(() => t.close());

const verify = (http: TestAgent, auth: Auth) => http.get('/v1/auth/verify').set(auth);

async function createIdentity(body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await t.http
    .post('/v1/identities')
    .set(org.auth)
    .send({ external_id: `cus_limits_${Date.now().toString(36)}_${++counter}`, ...body });
  expect(res.status).toBe(201);
  return res.body;
}

async function keysOf(
  identityId: string,
  n: number,
  body: Record<string, unknown> = {},
): Promise<CreatedKey[]> {
  const keys: CreatedKey[] = [];
  for (let i = 0; i < n; i++)
    keys.push(await createKey(t.http, org.auth, { role: 'viewer', identity_id: identityId, ...body }));
  return keys;
}

const identityCredits = async (id: string) =>
  (await t.http.get(`/v1/identities/${id}`).set(org.auth).expect(200)).body.credits;
const keyCredits = async (id: string) =>
  (await t.http.get(`/v1/api-keys/${id}`).set(org.auth).expect(200)).body.credits;

describe('shared rate limit', () => {
  it('accepts exactly N requests of all its keys together in a minute, then 429 with scope identity', async () => {
    const identity = await createIdentity({ rate_limit: { requests_per_minute: 5 } });
    const keys = await keysOf(identity.id, 3, { rate_limit: { requests_per_minute: 100 } });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await verify(t.http, keys[i % 3].auth)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);

    for (const key of keys) {
      const refused = await verify(t.http, key.auth);
      const problem = expectProblem(refused, 429, 'rate_limited');
      expect(problem).toMatchObject({ scope: 'identity' });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // Sliding windows (the default): until one more fits, at most the window and a 1/N share of the next.
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60 + 60 / 5);
    }
  });

  it("refuses by the key's own window first, with scope key, while the identity has room", async () => {
    const identity = await createIdentity({ rate_limit: { requests_per_minute: 100 } });
    const [key, other] = await keysOf(identity.id, 2, { rate_limit: { requests_per_minute: 2 } });
    await verify(t.http, key.auth).expect(200);
    await verify(t.http, key.auth).expect(200);
    const refused = await verify(t.http, key.auth);
    expect(expectProblem(refused, 429, 'rate_limited')).toMatchObject({ scope: 'key' });
    // The budget headers describe the key's own windows, not the identity's.
    expect(refused.headers['x-ratelimit-limit']).toBe('2');
    await verify(t.http, other.auth).expect(200);
  });

  it('applies a changed limit to its keys at once, and none after it is removed', async () => {
    const identity = await createIdentity({});
    const [key] = await keysOf(identity.id, 1);
    await verify(t.http, key.auth).expect(200);
    await t.http
      .patch(`/v1/identities/${identity.id}`)
      .set(org.auth)
      .send({ rate_limit: { requests_per_minute: 1 } })
      .expect(200);
    await verify(t.http, key.auth).expect(200);
    expect(expectProblem(await verify(t.http, key.auth), 429, 'rate_limited')).toMatchObject({
      scope: 'identity',
    });
    await t.http.patch(`/v1/identities/${identity.id}`).set(org.auth).send({ rate_limit: null }).expect(200);
    await verify(t.http, key.auth).expect(200);
  });
});

describe('shared credits', () => {
  it('spends one balance for all its keys: N requests, then 429 credits_exhausted with scope identity', async () => {
    const identity = await createIdentity({ credits: { remaining: 4 } });
    const keys = await keysOf(identity.id, 2);
    const remaining: number[] = [];
    for (let i = 0; i < 4; i++)
      remaining.push((await verify(t.http, keys[i % 2].auth).expect(200)).body.credits_remaining);
    // The key has no credits of its own: verify shows the identity's balance after this request.
    expect(remaining).toEqual([3, 2, 1, 0]);
    for (const key of keys) {
      const refused = await verify(t.http, key.auth);
      expect(expectProblem(refused, 429, 'credits_exhausted')).toMatchObject({ scope: 'identity' });
    }
    expect(await identityCredits(identity.id)).toMatchObject({ remaining: 0 });
  });

  it("spends from both or from neither: a key short of credits takes nothing of the identity's", async () => {
    const identity = await createIdentity({ credits: { remaining: 10 } });
    const [key] = await keysOf(identity.id, 1, { credits: { remaining: 2 } });
    // The key's own balance is the one verify shows when it has one.
    expect((await verify(t.http, key.auth).expect(200)).body.credits_remaining).toBe(1);
    expect((await verify(t.http, key.auth).expect(200)).body.credits_remaining).toBe(0);
    const refused = await verify(t.http, key.auth);
    expect(expectProblem(refused, 429, 'credits_exhausted')).toMatchObject({ scope: 'key' });
    expect(await identityCredits(identity.id)).toMatchObject({ remaining: 8 });
    expect(await keyCredits(key.id)).toMatchObject({ remaining: 0 });
  });

  it('a request the windows refuse spends from neither balance', async () => {
    const identity = await createIdentity({
      rate_limit: { requests_per_minute: 2 },
      credits: { remaining: 10 },
    });
    const [key] = await keysOf(identity.id, 1, { credits: { remaining: 10 } });
    await verify(t.http, key.auth).expect(200);
    await verify(t.http, key.auth).expect(200);
    const refused = await verify(t.http, key.auth);
    expect(expectProblem(refused, 429, 'rate_limited')).toMatchObject({ scope: 'identity' });
    expect(await keyCredits(key.id)).toMatchObject({ remaining: 8 });
    expect(await identityCredits(identity.id)).toMatchObject({ remaining: 8 });
  });

  it("an identity short of credits takes nothing of the key's", async () => {
    const identity = await createIdentity({ credits: { remaining: 1 } });
    const [key] = await keysOf(identity.id, 1, { credits: { remaining: 5 } });
    await verify(t.http, key.auth).expect(200);
    const refused = await verify(t.http, key.auth);
    expect(expectProblem(refused, 429, 'credits_exhausted')).toMatchObject({ scope: 'identity' });
    expect(await keyCredits(key.id)).toMatchObject({ remaining: 4 });
    expect(await identityCredits(identity.id)).toMatchObject({ remaining: 0 });
  });

  it('a top-up by PATCH replaces the balance and takes effect at once', async () => {
    const identity = await createIdentity({ credits: { remaining: 1 } });
    const [key] = await keysOf(identity.id, 1);
    await verify(t.http, key.auth).expect(200);
    expectProblem(await verify(t.http, key.auth), 429, 'credits_exhausted');
    const topped = await t.http
      .patch(`/v1/identities/${identity.id}`)
      .set(org.auth)
      .send({ credits: { remaining: 3 } })
      .expect(200);
    expect(topped.body.credits).toEqual({ remaining: 3, refill: null, refilled_at: null });
    expect((await verify(t.http, key.auth).expect(200)).body.credits_remaining).toBe(2);
    // Removing the budget makes the identity's keys unlimited again.
    await t.http.patch(`/v1/identities/${identity.id}`).set(org.auth).send({ credits: null }).expect(200);
    expect((await verify(t.http, key.auth).expect(200)).body.credits_remaining).toBeNull();
  });

  it('refills daily at 00:00 UTC, with Retry-After up to the refill while exhausted', async () => {
    clock.set(Date.parse('2026-03-10T15:30:00Z'));
    const identity = await createIdentity({
      credits: { remaining: 1, refill: { interval: 'daily', amount: 3 } },
    });
    const [key] = await keysOf(identity.id, 1);
    await verify(t.http, key.auth).expect(200);
    clock.set(Date.parse('2026-03-10T23:59:00Z'));
    const refused = await verify(t.http, key.auth);
    expect(expectProblem(refused, 429, 'credits_exhausted')).toMatchObject({ scope: 'identity' });
    expect(refused.headers['retry-after']).toBe('60');
    clock.set(Date.parse('2026-03-11T00:00:00Z'));
    expect((await verify(t.http, key.auth).expect(200)).body.credits_remaining).toBe(2);
    expect(await identityCredits(identity.id)).toEqual({
      remaining: 2,
      refill: { interval: 'daily', amount: 3 },
      refilled_at: '2026-03-11T00:00:00.000Z',
    });
    // Unused for days: one refill for the latest midnight, shown before any request.
    clock.set(Date.parse('2026-03-14T09:00:00Z'));
    expect(await identityCredits(identity.id)).toMatchObject({
      remaining: 3,
      refilled_at: '2026-03-14T00:00:00.000Z',
    });
    clock.set(Date.parse('2026-03-10T15:30:00Z'));
  });

  it('records identity.credits_low once when the shared balance falls below 10% of the amount set', async () => {
    const identity = await createIdentity({ credits: { remaining: 10 } });
    const keys = await keysOf(identity.id, 2);
    for (let i = 0; i < 10; i++) await verify(t.http, keys[i % 2].auth).expect(200);
    expectProblem(await verify(t.http, keys[0].auth), 429, 'credits_exhausted');
    const lows = async () =>
      (
        await t.http.get('/v1/audit-log').query({ action: 'identity.credits_low', limit: 100 }).set(org.auth)
      ).body.data.filter((entry: any) => entry.details.identity_id === identity.id);
    const { value } = await pollUntil(lows, (entries) => entries.length > 0, { timeoutMs: 15_000 });
    expect(value).toHaveLength(1);
    expect(value[0]).toMatchObject({
      action: 'identity.credits_low',
      actor: { type: 'system', id: null },
      details: { identity_id: identity.id, external_id: identity.external_id, remaining: 0, amount: 10 },
    });
  });

  it('a task reserves max_credits from the identity, and is refused with scope identity when it cannot', async () => {
    const identity = await createIdentity({ credits: { remaining: 10 } });
    const [key] = await keysOf(identity.id, 1, { role: 'developer' });
    const refused = await t.http
      .post('/v1/tasks')
      .set(key.auth)
      .send({ instruction: 'too dear', agent_type: 'echo', max_credits: 50 });
    expect(expectProblem(refused, 429, 'credits_exhausted')).toMatchObject({ scope: 'identity' });
    // Nothing spent, not even the refused request's own credit.
    expect(await identityCredits(identity.id)).toMatchObject({ remaining: 10 });

    const created = await t.http
      .post('/v1/tasks')
      .set(key.auth)
      .send({ instruction: 'fits', agent_type: 'echo', max_credits: 4 })
      .expect(202);
    // The request's credit and the reservation: 10 - 1 - 4.
    expect(await identityCredits(identity.id)).toMatchObject({ remaining: 5 });
    expect(created.body.max_credits).toBe(4);
  });
});

describe('POST /v1/keys/verify with an identity', () => {
  it('spends cost from the identity and shows its balance; refuses with scope when it is short', async () => {
    const identity = await createIdentity({ credits: { remaining: 5 } });
    const [key] = await keysOf(identity.id, 1);
    const service = await createKey(t.http, org.auth, { role: 'api_manager', name: 'verifier' });
    const check = (cost: number) =>
      t.http.post('/v1/keys/verify').set(service.auth).send({ key: key.key, cost }).expect(200);

    const valid = await check(3);
    expect(valid.body).toMatchObject({
      valid: true,
      code: 'valid',
      credits_remaining: 2,
      identity: { id: identity.id, external_id: identity.external_id },
    });
    const short = await check(3);
    expect(short.body).toMatchObject({ valid: false, code: 'credits_exhausted', credits_remaining: 2 });
    expect(await identityCredits(identity.id)).toMatchObject({ remaining: 2 });
  });

  it('counts one request of the identity window per verify', async () => {
    const identity = await createIdentity({ rate_limit: { requests_per_minute: 2 } });
    const [key] = await keysOf(identity.id, 1);
    const service = await createKey(t.http, org.auth, { role: 'api_manager', name: 'verifier' });
    const codes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.http.post('/v1/keys/verify').set(service.auth).send({ key: key.key }).expect(200);
      codes.push(res.body.code);
    }
    expect(codes).toEqual(['valid', 'valid', 'rate_limited']);
  });

  it('spends nothing for a verify the windows refuse', async () => {
    const identity = await createIdentity({
      rate_limit: { requests_per_minute: 2 },
      credits: { remaining: 10 },
    });
    const [key] = await keysOf(identity.id, 1);
    const service = await createKey(t.http, org.auth, { role: 'api_manager', name: 'verifier' });
    const answers: [string, number][] = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.http
        .post('/v1/keys/verify')
        .set(service.auth)
        .send({ key: key.key, cost: 3 })
        .expect(200);
      answers.push([res.body.code, res.body.credits_remaining]);
    }
    expect(answers).toEqual([
      ['valid', 7],
      ['valid', 4],
      ['rate_limited', 4],
    ]);
    expect(await identityCredits(identity.id)).toMatchObject({ remaining: 4 });
  });
});
