import type { Response, Test } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { expectProblem, signUpOrganization, SignedUpOrganization, createUser } from './support/factories';
import { Auth, createKey, CreatedKey, pollUntil } from './support/keys';
import { ManualClock } from './support/manual-clock';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Key controls and credits over HTTP (CONTRACT.md, "Key controls, credits and usage"): the kill switch,
 * `meta`, credits with refills on a clock the test moves, the low-credit event, `last_used_ip`, and the
 * key-check metric by outcome. Runs on PostgreSQL (+ Redis when REDIS_URL is set: credits then live in
 * Redis) and on embedded PGlite. Two instances: test/key-controls.multi-instance.e2e-spec.ts.
 */

const METRICS_TOKEN = 'metrics-token-for-key-controls';
const verify = (http: TestAgent, auth: Auth): Test => http.get('/v1/auth/verify').set(auth);

let t: TestApp;
let org: SignedUpOrganization;
// 2026-03-10 15:30 UTC: refills are due at 2026-03-11 00:00 (daily) and 2026-04-01 00:00 (monthly).
const clock = new ManualClock(Date.parse('2026-03-10T15:30:00Z'));

beforeAll(async () => {
  t = await startTestApp({ clock, env: { METRICS_TOKEN, AUDIT_DENIAL_WINDOW_SECONDS: '1' } });
  org = await signUpOrganization(t.http, 'Controls');
});
afterAll(() => t?.close());

const getKey = async (id: string): Promise<Record<string, any>> => {
  const res = await t.http.get(`/v1/api-keys/${id}`).set(org.auth);
  expect(res.status).toBe(200);
  return res.body;
};
/**
 * An exhausted key, at `exhaustedAt`, is refused with credits_exhausted and a Retry-After of the seconds
 * until its refill; at `refillAt` it is refilled: a request passes and leaves `remainingAfter`.
 */
async function expectRefill(
  key: CreatedKey,
  at: { exhaustedAt: string; retryAfter: string; refillAt: string; remainingAfter: number },
): Promise<void> {
  clock.set(Date.parse(at.exhaustedAt));
  const refused = await verify(t.http, key.auth);
  expectProblem(refused, 429, 'credits_exhausted');
  expect(refused.headers['retry-after']).toBe(at.retryAfter);
  clock.set(Date.parse(at.refillAt));
  expect((await verify(t.http, key.auth).expect(200)).body.credits_remaining).toBe(at.remainingAfter);
}
const patchKey = (id: string, body: Record<string, unknown>): Test =>
  t.http.patch(`/v1/api-keys/${id}`).set(org.auth).send(body);
const auditActions = async (id: string): Promise<string[]> => {
  const res = await t.http.get(`/v1/api-keys/${id}/audit-log`).query({ limit: 100 }).set(org.auth);
  expect(res.status).toBe(200);
  return res.body.data.map((entry: { action: string }) => entry.action);
};

describe('enabled: the kill switch', () => {
  it('refuses a disabled key with 401 key_disabled and status disabled, and restores it when enabled', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer' });
    expect(key.body.enabled).toBe(true);
    await verify(t.http, key.auth).expect(200);

    const disabled = await patchKey(key.id, { enabled: false });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ enabled: false, status: 'disabled' });
    const refused = await verify(t.http, key.auth);
    expectProblem(refused, 401, 'key_disabled');
    expect(refused.headers['www-authenticate']).toBe('Bearer');
    expectProblem(await t.http.get('/v1/agents').set(key.auth), 401, 'key_disabled');

    const listed = await t.http.get('/v1/api-keys').query({ status: 'disabled' }).set(org.auth);
    expect(listed.body.data.map((k: { id: string }) => k.id)).toContain(key.id);
    const active = await t.http.get('/v1/api-keys').query({ status: 'active', limit: 100 }).set(org.auth);
    expect(active.body.data.map((k: { id: string }) => k.id)).not.toContain(key.id);

    const enabled = await patchKey(key.id, { enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, status: 'active' });
    await verify(t.http, key.auth).expect(200);

    const actions = await auditActions(key.id);
    expect(actions.filter((a) => a === 'key.disabled')).toHaveLength(1);
    expect(actions.filter((a) => a === 'key.enabled')).toHaveLength(1);
    // Turning the switch alone is not also recorded as an update.
    expect(actions).not.toContain('key.updated');
  });

  it('creates a key switched off, and records no event when PATCH repeats the current value', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', enabled: false });
    expect(key.body).toMatchObject({ enabled: false, status: 'disabled' });
    expectProblem(await verify(t.http, key.auth), 401, 'key_disabled');
    expect((await patchKey(key.id, { enabled: false })).status).toBe(200);
    expect(await auditActions(key.id)).not.toContain('key.disabled');
  });

  it('shows revoked before disabled', async () => {
    const member = await createUser(t.http, org, 'api_manager');
    const key = await createKey(t.http, member.auth, { role: 'viewer', enabled: false });
    expect(key.body.status).toBe('disabled');
    await t.http.post(`/v1/users/${member.id}/deactivate`).set(org.auth).expect(200);
    expect((await getKey(key.id)).status).toBe('revoked');
    expectProblem(await verify(t.http, key.auth), 401, 'key_revoked');
  });

  it('refuses enabled: null and a non-boolean with 400, changing nothing', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer' });
    expectProblem(await patchKey(key.id, { enabled: null }), 400);
    expectProblem(await patchKey(key.id, { enabled: 'no' }), 400);
    expect((await getKey(key.id)).enabled).toBe(true);
  });
});

describe('meta', () => {
  it('is returned on the key object and by verify, replaced whole by PATCH, cleared by null', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', meta: { plan: 'pro', seats: 3 } });
    expect(key.body.meta).toEqual({ plan: 'pro', seats: 3 });
    expect((await verify(t.http, key.auth).expect(200)).body.meta).toEqual({ plan: 'pro', seats: 3 });

    const replaced = await patchKey(key.id, { meta: { customer_id: 'cus_42' } });
    expect(replaced.body.meta).toEqual({ customer_id: 'cus_42' });
    expect((await verify(t.http, key.auth).expect(200)).body.meta).toEqual({ customer_id: 'cus_42' });

    expect((await patchKey(key.id, { meta: null })).body.meta).toEqual({});
    expect((await getKey(key.id)).meta).toEqual({});
    expect((await verify(t.http, key.auth).expect(200)).body.meta).toEqual({});
  });

  it('takes at most 4 KiB of JSON text, and only an object', async () => {
    // {"note":"…"} is 11 characters around the note.
    const fits = { note: 'x'.repeat(4096 - 11) };
    expect(Buffer.byteLength(JSON.stringify(fits))).toBe(4096);
    const key = await createKey(t.http, org.auth, { role: 'viewer', meta: fits });
    expect(key.body.meta).toEqual(fits);

    const tooBig = { note: 'x'.repeat(4096 - 10) };
    const refused = expectProblem(await patchKey(key.id, { meta: tooBig }), 400, 'validation_failed');
    expect(refused.errors).toEqual([expect.objectContaining({ field: 'meta' })]);
    // Multi-byte characters count as bytes of UTF-8.
    expectProblem(await patchKey(key.id, { meta: { note: 'é'.repeat(2100) } }), 400, 'validation_failed');
    for (const notAnObject of [['a'], 'plan', 42, true]) {
      expectProblem(await patchKey(key.id, { meta: notAnObject }), 400, 'validation_failed');
    }
    expectProblem(
      await t.http.post('/v1/api-keys').set(org.auth).send({ name: 'big', role: 'viewer', meta: tooBig }),
      400,
      'validation_failed',
    );
    expect((await getKey(key.id)).meta).toEqual(fits);
  });
});

describe('credits', () => {
  const remainingOf = async (id: string): Promise<number | null> =>
    (await getKey(id)).credits?.remaining ?? null;

  it('spends one per request, verify included, then refuses with 429 credits_exhausted and spends nothing', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 3 } });
    expect(key.body.credits).toEqual({ remaining: 3, refill: null, refilled_at: null });

    expect((await verify(t.http, key.auth).expect(200)).body.credits_remaining).toBe(2);
    await t.http.get('/v1/agents').set(key.auth).expect(200);
    expect((await verify(t.http, key.auth).expect(200)).body.credits_remaining).toBe(0);

    const refused = await verify(t.http, key.auth);
    expectProblem(refused, 429, 'credits_exhausted');
    // No refill: nothing to wait for.
    expect(refused.headers['retry-after']).toBeUndefined();
    expectProblem(await t.http.get('/v1/agents').set(key.auth), 429, 'credits_exhausted');
    expect(await remainingOf(key.id)).toBe(0);
  });

  it('spends nothing on requests refused by restrictions, permission or rate limit', async () => {
    const restricted = await createKey(t.http, org.auth, {
      role: 'viewer',
      allowed_ips: ['203.0.113.7'],
      credits: { remaining: 5 },
    });
    expectProblem(await verify(t.http, restricted.auth), 403, 'ip_not_allowed');
    expect(await remainingOf(restricted.id)).toBe(5);

    const viewer = await createKey(t.http, org.auth, {
      role: 'viewer',
      credits: { remaining: 5 },
      rate_limit: { requests_per_minute: 2 },
    });
    expectProblem(await t.http.get('/v1/api-keys').set(viewer.auth), 403, 'forbidden');
    expect(await remainingOf(viewer.id)).toBe(5);
    await verify(t.http, viewer.auth).expect(200);
    await verify(t.http, viewer.auth).expect(200);
    expectProblem(await verify(t.http, viewer.auth), 429, 'rate_limited');
    expect(await remainingOf(viewer.id)).toBe(3);
  });

  it('a PATCH top-up takes effect at the next request; credits: null makes the key unlimited', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 1 } });
    await verify(t.http, key.auth).expect(200);
    expectProblem(await verify(t.http, key.auth), 429, 'credits_exhausted');

    const topped = await patchKey(key.id, { credits: { remaining: 2 } });
    expect(topped.body.credits).toEqual({ remaining: 2, refill: null, refilled_at: null });
    expect((await verify(t.http, key.auth).expect(200)).body.credits_remaining).toBe(1);

    expect((await patchKey(key.id, { credits: null })).body.credits).toBeNull();
    for (let i = 0; i < 3; i++)
      expect((await verify(t.http, key.auth).expect(200)).body.credits_remaining).toBeNull();
  });

  it('refuses invalid credits with 400 and changes nothing', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 7 } });
    for (const credits of [
      { remaining: -1 },
      { remaining: 1.5 },
      { remaining: '5' },
      {},
      { remaining: 5, refill: { interval: 'weekly', amount: 5 } },
      { remaining: 5, refill: { interval: 'daily', amount: 0 } },
      { remaining: 5, refill: { interval: 'daily' } },
      7,
    ]) {
      expectProblem(await patchKey(key.id, { credits }), 400, 'validation_failed');
    }
    expect(await remainingOf(key.id)).toBe(7);
  });

  it('refills daily at 00:00 UTC, with Retry-After up to the refill while exhausted', async () => {
    clock.set(Date.parse('2026-03-10T15:30:00Z'));
    const key = await createKey(t.http, org.auth, {
      role: 'viewer',
      credits: { remaining: 2, refill: { interval: 'daily', amount: 5 } },
    });
    expect(key.body.credits).toEqual({
      remaining: 2,
      refill: { interval: 'daily', amount: 5 },
      refilled_at: null,
    });
    await verify(t.http, key.auth).expect(200);
    await verify(t.http, key.auth).expect(200);

    await expectRefill(key, {
      exhaustedAt: '2026-03-10T23:59:00Z',
      retryAfter: '60',
      refillAt: '2026-03-11T00:00:00Z',
      remainingAfter: 4,
    });
    expect((await getKey(key.id)).credits).toEqual({
      remaining: 4,
      refill: { interval: 'daily', amount: 5 },
      refilled_at: '2026-03-11T00:00:00.000Z',
    });

    // Three days unused: one refill, for the latest midnight, shown before any request.
    clock.set(Date.parse('2026-03-14T09:00:00Z'));
    expect((await getKey(key.id)).credits).toMatchObject({
      remaining: 5,
      refilled_at: '2026-03-14T00:00:00.000Z',
    });
    expect((await verify(t.http, key.auth).expect(200)).body.credits_remaining).toBe(4);
  });

  it('refills monthly on the 1st', async () => {
    clock.set(Date.parse('2026-03-10T15:30:00Z'));
    const key = await createKey(t.http, org.auth, {
      role: 'viewer',
      credits: { remaining: 1, refill: { interval: 'monthly', amount: 3 } },
    });
    await verify(t.http, key.auth).expect(200);
    await expectRefill(key, {
      exhaustedAt: '2026-03-31T23:00:00Z',
      retryAfter: '3600',
      refillAt: '2026-04-01T00:00:00Z',
      remainingAfter: 2,
    });
  });

  it('records key.credits_low once when the balance falls below 10% of the amount set', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 20 } });
    // 10% of 20 is 2: the spend that leaves 1 crosses it; the ones after do not send it again.
    for (let i = 0; i < 20; i++) await verify(t.http, key.auth).expect(200);
    expectProblem(await verify(t.http, key.auth), 429, 'credits_exhausted');
    const low = async () => (await auditActions(key.id)).filter((a) => a === 'key.credits_low');
    const { value } = await pollUntil(low, (entries) => entries.length > 0, { timeoutMs: 5_000 });
    expect(value).toHaveLength(1);
    const entries = await t.http.get(`/v1/api-keys/${key.id}/audit-log`).set(org.auth);
    const entry = entries.body.data.find((e: { action: string }) => e.action === 'key.credits_low');
    expect(entry.details).toEqual({ remaining: 1, amount: 20 });
    expect(entry.actor).toEqual({ type: 'system', id: null });

    // A new amount is a new mark: sent once more when it is crossed.
    await patchKey(key.id, { credits: { remaining: 10 } }).expect(200);
    for (let i = 0; i < 10; i++) await verify(t.http, key.auth).expect(200);
    const { value: again } = await pollUntil(low, (entries) => entries.length > 1, { timeoutMs: 5_000 });
    expect(again).toHaveLength(2);
  });

  it('counts access tokens never: credits are a key budget', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 4 } });
    for (let i = 0; i < 3; i++) await t.http.get(`/v1/api-keys/${key.id}`).set(org.auth).expect(200);
    expect(await remainingOf(key.id)).toBe(4);
  });
});

describe('last_used_ip and the key-check metric', () => {
  let key: CreatedKey;
  beforeAll(async () => {
    key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 1 } });
  });

  it('shows the client address of the last use', async () => {
    expect(key.body.last_used_ip).toBeNull();
    await verify(t.http, key.auth).expect(200);
    const { value } = await pollUntil(
      () => getKey(key.id),
      (body) => body.last_used_ip !== null,
    );
    expect(value.last_used_ip).toMatch(/^(::ffff:)?127\.0\.0\.1$|^::1$/);
    expect(value.last_used_at).not.toBeNull();
  });

  it('counts key checks by outcome, never by key', async () => {
    expectProblem(await verify(t.http, key.auth), 429, 'credits_exhausted');
    await patchKey(key.id, { enabled: false }).expect(200);
    expectProblem(await verify(t.http, key.auth), 401, 'key_disabled');
    const metrics: Response = await t.http.get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
    expect(metrics.status).toBe(200);
    const count = (outcome: string): number =>
      Number(
        new RegExp(`gatehouse_key_checks_total\\{outcome="${outcome}"\\} (\\d+)`).exec(metrics.text)?.[1] ??
          0,
      );
    expect(count('allowed')).toBeGreaterThan(0);
    expect(count('credits_exhausted')).toBeGreaterThan(0);
    expect(count('key_disabled')).toBeGreaterThan(0);
    expect(metrics.text).not.toContain(key.id);
  });
});
