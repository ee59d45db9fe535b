import { RedisConnection, type RedisClient } from '../src/redis/redis.connection';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { Auth, createKey, CreatedKey, pollUntil } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

/**
 * A request's windows and balances take one round trip to Redis (issue "Identities and verification for
 * other services"): the script that counts its rate-limit windows, the key's and its identity's, also
 * spends its credits, the key's and its identity's, and only when every window let it through. Counted
 * at the client: the scripts (`eval`/`evalsha`) it sends while one request is answered. Skipped without
 * REDIS_URL: windows and credits are then in this process and the database.
 */

const HAS_REDIS = Boolean(process.env.REDIS_URL);
const describeWithRedis = HAS_REDIS ? describe : describe.skip;
if (!HAS_REDIS) console.warn('redis-round-trips suite skipped: it needs REDIS_URL.');

let t: TestApp;
let org: SignedUpOrganization;
let redis: RedisClient;
let counter = 0;

beforeAll(async () => {
  if (!HAS_REDIS) return;
  // A command deadline no loaded machine reaches: a script answered after the deadline (500 ms by
  // default) counts as not answered, so its requests get the outage policy's answer (open: the whole
  // budget, uncounted), and these tests are about exact counts and balances, not a slow Redis
  // (test/faults/redis-hang.e2e-spec.ts is). And a cap on a key's requests in flight above the waves'
  // 60: a loaded machine can hold more than the default 20 of them open at once, and these are about
  // counting every one, not the cap (concurrency tests are).
  t = await startTestApp({
    env: { REDIS_COMMAND_TIMEOUT_MS: '5000', MAX_CONCURRENT_REQUESTS_PER_KEY: '1000' },
  });
  org = await signUpOrganization(t.http, 'Round trips');
  redis = t.app.get(RedisConnection).client!;
});
afterAll(() => t?.close());

/** The scripts sent to Redis while `action` runs, by name of the command that sent them. */
async function scriptsDuring<T>(action: () => Promise<T>): Promise<{ result: T; scripts: number }> {
  const sent = jest.spyOn(redis, 'sendCommand');
  try {
    const result = await action();
    const scripts = sent.mock.calls.filter(([command]) => command.name.startsWith('eval')).length;
    return { result, scripts };
  } finally {
    sent.mockRestore();
  }
}

async function identityWith(body: Record<string, unknown>): Promise<string> {
  const res = await t.http
    .post('/v1/identities')
    .set(org.auth)
    .send({ external_id: `cus_trips_${Date.now().toString(36)}_${++counter}`, ...body });
  expect(res.status).toBe(201);
  return res.body.id;
}

const verify = (auth: Auth) => t.http.get('/v1/auth/verify').set(auth);
const keyBalance = async (key: CreatedKey) =>
  (await t.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200)).body.credits.remaining;
const identityBalance = async (id: string) =>
  (await t.http.get(`/v1/identities/${id}`).set(org.auth).expect(200)).body.credits.remaining;

describeWithRedis('one round trip for a request’s windows and balances', () => {
  it('spends a key’s credit in the script that counts its windows', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 10 } });
    // The first spend hands the balance to Redis (a claim on the row, then a seed): the usual way.
    await verify(key.auth).expect(200);

    const { result, scripts } = await scriptsDuring(() => verify(key.auth));
    expect(result.status).toBe(200);
    expect(result.body.credits_remaining).toBe(8);
    expect(scripts).toBe(1);
    expect(await keyBalance(key)).toBe(8);
  });

  it('spends the key’s and its identity’s credits with the key’s and the identity’s windows', async () => {
    const identity = await identityWith({
      credits: { remaining: 20 },
      rate_limit: { requests_per_minute: 50 },
    });
    const key = await createKey(t.http, org.auth, {
      role: 'viewer',
      identity_id: identity,
      credits: { remaining: 10 },
    });
    await verify(key.auth).expect(200);

    const { result, scripts } = await scriptsDuring(() => verify(key.auth));
    expect(result.status).toBe(200);
    expect(scripts).toBe(1);
    expect(await keyBalance(key)).toBe(8);
    expect(await identityBalance(identity)).toBe(18);
  });

  it('refuses in that one script when a balance is short, saying which, and spends from neither', async () => {
    const identity = await identityWith({ credits: { remaining: 2 } });
    const key = await createKey(t.http, org.auth, {
      role: 'viewer',
      identity_id: identity,
      credits: { remaining: 10 },
    });
    await verify(key.auth).expect(200);
    await verify(key.auth).expect(200);

    const { result, scripts } = await scriptsDuring(() => verify(key.auth));
    expect(expectProblem(result, 429, 'credits_exhausted')).toMatchObject({ scope: 'identity' });
    expect(scripts).toBe(1);
    expect(await keyBalance(key)).toBe(8);
    expect(await identityBalance(identity)).toBe(0);
  });

  it('spends nothing when a window refuses the request', async () => {
    const key = await createKey(t.http, org.auth, {
      role: 'viewer',
      credits: { remaining: 10 },
      rate_limit: { requests_per_minute: 2 },
    });
    await verify(key.auth).expect(200);
    await verify(key.auth).expect(200);

    const { result, scripts } = await scriptsDuring(() => verify(key.auth));
    expectProblem(result, 429, 'rate_limited');
    expect(scripts).toBe(1);
    expect(await keyBalance(key)).toBe(8);
  });

  it('lets exactly the balance through in a burst, however its requests share script runs', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 8 } });
    await verify(key.auth).expect(200);
    const statuses = (await Promise.all(Array.from({ length: 15 }, () => verify(key.auth)))).map(
      (res) => res.status,
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(7);
    expect(statuses.filter((status) => status === 429)).toHaveLength(8);
    expect(await keyBalance(key)).toBe(0);
  });

  it('POST /v1/keys/verify: the verified key’s windows and its cost from both balances in one script', async () => {
    const service = await createKey(t.http, org.auth, { name: 'gateway', role: 'api_manager' });
    const identity = await identityWith({ credits: { remaining: 20 } });
    const key = await createKey(t.http, org.auth, {
      role: 'viewer',
      identity_id: identity,
      credits: { remaining: 10 },
    });
    const verifyKey = () => t.http.post('/v1/keys/verify').set(service.auth).send({ key: key.key, cost: 3 });
    expect((await verifyKey().expect(200)).body).toMatchObject({ valid: true, credits_remaining: 7 });

    const { result, scripts } = await scriptsDuring(() => verifyKey());
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ valid: true, code: 'valid', credits_remaining: 4 });
    // The service's own key check (its windows), then the verified key's windows and cost.
    expect(scripts).toBe(2);
    expect(await keyBalance(key)).toBe(4);
    expect(await identityBalance(identity)).toBe(14);
  });

  it('counts every request of a hot key in Redis before answering it, each with a count of its own', async () => {
    const key = await createKey(t.http, org.auth, {
      role: 'viewer',
      rate_limit: { requests_per_minute: 1_000_000, requests_per_hour: 60_000_000 },
    });
    const waves = 5;
    const perWave = 60;
    const requests = waves * perWave;
    // A sliding minute carries the previous minute's count weighted by what is left of it
    // (sliding-window.storage.ts), so requests made across a minute's edge show fewer hits than were
    // made. Started with 20 s of Redis's minute left at least, the requests share one minute.
    const minutePhase = async () => {
      const [seconds, micros] = await redis.time();
      return (Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)) % 60_000;
    };
    await pollUntil(minutePhase, (phase) => phase < 40_000, { timeoutMs: 30_000, intervalMs: 250 });
    const { result, scripts } = await scriptsDuring(async () => {
      const responses = [];
      for (let wave = 0; wave < waves; wave++)
        responses.push(...(await Promise.all(Array.from({ length: perWave }, () => verify(key.auth)))));
      return responses;
    });
    // Every one answered 200; a failure shows what the others got.
    const answers: Record<string, number> = {};
    for (const res of result) {
      const answer = res.status === 200 ? '200' : `${res.status} ${res.body?.code}`;
      answers[answer] = (answers[answer] ?? 0) + 1;
    }
    expect(answers).toEqual({ '200': requests });
    // Concurrent requests of the key share runs (one script for all of a turn's), never more than one each.
    expect(scripts).toBeGreaterThan(0);
    expect(scripts).toBeLessThanOrEqual(requests);
    // One instance, every request counted in Redis before its answer: the counts are exactly 1..300 in
    // both windows, each request its own, none counted ahead or skipped.
    for (const suffix of ['', '-hour']) {
      const remaining = result.map((res) => Number(res.headers[`x-ratelimit-remaining${suffix}`]));
      const limit = suffix ? 60_000_000 : 1_000_000;
      expect([...remaining].sort((x, y) => y - x)).toEqual(
        Array.from({ length: requests }, (_, i) => limit - 1 - i),
      );
    }
    // And Redis holds exactly those: the next request is the 301st.
    const next = await verify(key.auth).expect(200);
    expect(Number(next.headers['x-ratelimit-remaining'])).toBe(1_000_000 - requests - 1);
  });
});
