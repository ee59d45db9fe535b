import { expectProblem, SignedUpOrganization, signUpOrganization } from './support/factories';
import { Auth, createKey, CreatedKey, pollUntil } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Usage by identity over HTTP (CONTRACT, "Identities"): an identity's buckets are its keys' summed,
 * each key for the time it belonged to the identity (a key moved or detached leaves what it did with
 * the identity it did it under); GET /v1/usage?group_by=identity lists identities instead of keys. The
 * app runs on the real clock with a worker, so the buckets compared are sums over the default range
 * (a request near the turn of an hour may land in either of two buckets, both in it).
 */

/** The contract's bound for a request to show in usage. */
const READABLE_WITHIN_MS = 10_000;

type Json = Record<string, any>;

let t: TestApp;
let org: SignedUpOrganization;
let sequence = 0;

beforeAll(async () => {
  // A worker, so that a task's run shows in its creating key's identity.
  t = await startTestApp({ env: { WORKER_CONCURRENCY: '1', WORKER_POLL_MS: '50' } });
  org = await signUpOrganization(t.http, 'Identity usage');
});
afterAll(() => t?.close());

async function createIdentity(auth: Auth, label = 'cus'): Promise<Json> {
  const res = await t.http
    .post('/v1/identities')
    .set(auth)
    .send({ external_id: `${label}_${Date.now().toString(36)}_${++sequence}` });
  expect(res.status).toBe(201);
  return res.body as Json;
}

const verify = (key: CreatedKey) => t.http.get('/v1/auth/verify').set(key.auth);

const attach = (key: CreatedKey, identityId: string | null, auth: Auth = org.auth) =>
  t.http.patch(`/v1/api-keys/${key.id}`).set(auth).send({ identity_id: identityId }).expect(200);

function identityUsage(id: string, query: Record<string, string> = {}, auth: Auth = org.auth) {
  return t.http.get(`/v1/identities/${id}/usage`).query(query).set(auth);
}

function organizationUsage(query: Record<string, string | string[]> = {}, auth: Auth = org.auth) {
  return t.http.get('/v1/usage').query(query).set(auth);
}

/**
 * A usage answer's buckets summed into one, field by field as the buckets carry them (denied_by_reason by
 * code): a field the answer left out is missing from the sum too, which the whole-object comparisons see.
 */
function totalsOf(body: Json): Json {
  const totals: Json = { denied_by_reason: {} };
  for (const bucket of body.data as Json[]) {
    for (const [field, value] of Object.entries(bucket)) {
      if (field === 'start') continue;
      if (field === 'denied_by_reason') {
        for (const [code, n] of Object.entries(value as Record<string, number>))
          totals.denied_by_reason[code] = (totals.denied_by_reason[code] ?? 0) + n;
      } else {
        totals[field] = (totals[field] ?? 0) + (value as number);
      }
    }
  }
  return totals;
}

/** Polls a usage route until its summed buckets reach `requests`, for the contract's 10 seconds. */
async function totalsWhen(read: () => PromiseLike<{ body: Json }>, done: (totals: Json) => boolean) {
  const { value } = await pollUntil(async () => totalsOf((await read()).body), done, {
    timeoutMs: READABLE_WITHIN_MS,
    intervalMs: 100,
  });
  return value;
}

describe('GET /v1/identities/{id}/usage', () => {
  it("sums its keys' usage: requests by outcome, refusals before and after the key check, verify, credits and runs", async () => {
    const identity = await createIdentity(org.auth);
    const credited = await createKey(t.http, org.auth, {
      name: 'credited',
      identity_id: identity.id,
      credits: { remaining: 100, refill: null },
    });
    const viewer = await createKey(t.http, org.auth, {
      name: 'viewer',
      role: 'viewer',
      identity_id: identity.id,
    });
    const loose = await createKey(t.http, org.auth, { name: 'no identity' });
    const gateway = await createKey(t.http, org.auth, { name: 'gateway', role: 'api_manager' });

    // credited: two requests and a task, each spending a credit; the run counts when it ends.
    for (let i = 0; i < 2; i++) await verify(credited).expect(200);
    const task = await t.http
      .post('/v1/tasks')
      .set(credited.auth)
      .send({ instruction: 'hello', agent_type: 'echo' })
      .expect(202);
    // viewer: one allowed, one refused by the permission step, one checked by another service, and
    // one refused before it resolves to a principal (disabled).
    await verify(viewer).expect(200);
    await t.http.get('/v1/api-keys').set(viewer.auth).expect(403);
    const verified = await t.http
      .post('/v1/keys/verify')
      .set(gateway.auth)
      .send({ key: viewer.key })
      .expect(200);
    expect(verified.body).toMatchObject({ valid: true, identity: { id: identity.id } });
    await t.http.patch(`/v1/api-keys/${viewer.id}`).set(org.auth).send({ enabled: false }).expect(200);
    await verify(viewer).expect(401);
    // Not the identity's.
    for (let i = 0; i < 3; i++) await verify(loose).expect(200);

    const expected = {
      requests: 7,
      allowed: 5,
      denied: 2,
      denied_by_reason: { forbidden: 1, key_disabled: 1 },
      tasks: 1,
      input_tokens: 0,
      output_tokens: 0,
      credits_spent: 3,
    };
    const totals = await totalsWhen(
      () => identityUsage(identity.id),
      (sum) => sum.requests >= expected.requests && sum.tasks >= expected.tasks,
    );
    expect(totals).toEqual(expected);
    const ended = await t.http.get(`/v1/tasks/${task.body.id}`).set(org.auth).expect(200);
    expect(ended.body.status).toBe('succeeded');

    // The same shape and buckets as a key's usage, named by identity_id.
    const range = { from: '2030-05-10T13:20:00Z', to: '2030-05-10T15:00:00+02:00' };
    const { body } = await identityUsage(identity.id, range).expect(200);
    const ofKey = (
      await t.http.get(`/v1/api-keys/${credited.id}/usage`).query(range).set(org.auth).expect(200)
    ).body;
    expect(body).toEqual({ ...ofKey, key_id: undefined, identity_id: identity.id });
    expect(body).toMatchObject({ granularity: 'hour', from: '2030-05-10T13:00:00.000Z' });
    expect(body.data).toHaveLength(1);
    const byDefault = (await identityUsage(identity.id).expect(200)).body;
    expect(byDefault.data).toHaveLength(24);
    expect(Date.parse(byDefault.to) - Date.parse(byDefault.from)).toBe(23 * 3_600_000);

    const days = (await identityUsage(identity.id, { granularity: 'day' }).expect(200)).body;
    expect(days).toMatchObject({ identity_id: identity.id, granularity: 'day' });
    expect(days.data).toHaveLength(24);
    expect(totalsOf(days)).toEqual(expected);
  });

  it('keeps what a key did under the identity it belonged to then, when it moves and when it is detached', async () => {
    const first = await createIdentity(org.auth, 'first');
    const second = await createIdentity(org.auth, 'second');
    const key = await createKey(t.http, org.auth, { name: 'mover', identity_id: first.id });

    for (let i = 0; i < 2; i++) await verify(key).expect(200);
    await attach(key, second.id);
    for (let i = 0; i < 3; i++) await verify(key).expect(200);
    await attach(key, null);
    await verify(key).expect(200);
    // Back with the first one: it adds to, and does not take over, the earlier hours.
    await attach(key, first.id);
    await t.http.get('/v1/api-keys').set(key.auth).expect(200);

    // The key's own usage is all of it, whatever identity it was under.
    const ofKey = await totalsWhen(
      () => t.http.get(`/v1/api-keys/${key.id}/usage`).set(org.auth).expect(200),
      (sum) => sum.requests >= 7,
    );
    expect(ofKey).toMatchObject({ requests: 7, allowed: 7 });
    expect(totalsOf((await identityUsage(first.id).expect(200)).body)).toMatchObject({
      requests: 3,
      allowed: 3,
    });
    expect(totalsOf((await identityUsage(second.id).expect(200)).body)).toMatchObject({
      requests: 3,
      allowed: 3,
    });
  });

  it("counts the credits its keys spend from the identity's own balance", async () => {
    const identity = (
      await t.http
        .post('/v1/identities')
        .set(org.auth)
        .send({ external_id: `shared_${++sequence}`, credits: { remaining: 100, refill: null } })
        .expect(201)
    ).body as Json;
    const key = await createKey(t.http, org.auth, { name: 'spends shared', identity_id: identity.id });
    const gateway = await createKey(t.http, org.auth, { name: 'shared gateway', role: 'api_manager' });
    for (let i = 0; i < 2; i++) await verify(key).expect(200);
    const verified = await t.http
      .post('/v1/keys/verify')
      .set(gateway.auth)
      .send({ key: key.key, cost: 5 })
      .expect(200);
    expect(verified.body).toMatchObject({ valid: true, credits_remaining: 93 });

    expect(
      await totalsWhen(
        () => identityUsage(identity.id).expect(200),
        (sum) => sum.requests >= 3 && sum.credits_spent >= 7,
      ),
    ).toMatchObject({ requests: 3, allowed: 3, credits_spent: 7 });
  });

  it('answers zeros for an identity whose keys were not used, and counts a key only from when it joined', async () => {
    const identity = await createIdentity(org.auth, 'late');
    const key = await createKey(t.http, org.auth, { name: 'joins late' });
    for (let i = 0; i < 2; i++) await verify(key).expect(200);
    await totalsWhen(
      () => t.http.get(`/v1/api-keys/${key.id}/usage`).set(org.auth).expect(200),
      (sum) => sum.requests >= 2,
    );
    const { body } = await identityUsage(identity.id).expect(200);
    expect(body.data).toHaveLength(24);
    expect(totalsOf(body)).toMatchObject({ requests: 0, tasks: 0, credits_spent: 0 });

    await attach(key, identity.id);
    await verify(key).expect(200);
    expect(
      await totalsWhen(
        () => identityUsage(identity.id).expect(200),
        (sum) => sum.requests >= 1,
      ),
    ).toMatchObject({ requests: 1, allowed: 1 });
  });

  it('validates the query as a key usage does', async () => {
    const identity = await createIdentity(org.auth);
    for (const [query, field] of [
      [{ granularity: 'week' }, 'granularity'],
      [{ from: 'yesterday' }, 'from'],
      [{ from: '2030-05-10T12:00:00Z', to: '2030-05-10T11:00:00Z' }, 'from'],
      [{ from: '2020-01-01T00:00:00Z', to: '2030-01-01T00:00:00Z' }, 'from'],
      [{ bucket: 'hour' }, 'bucket'],
    ] as const) {
      const problem = expectProblem(await identityUsage(identity.id, query), 400, 'validation_failed');
      expect(problem.errors?.map((e) => e.field)).toEqual([field]);
    }
  });

  it("answers 404 for another organization's identity, a deleted one and an id that is not one", async () => {
    const other = await signUpOrganization(t.http, 'Identity usage, other');
    const theirs = await createIdentity(other.auth);
    expectProblem(await identityUsage(theirs.id), 404, 'not_found');
    const ours = await createIdentity(org.auth);
    expectProblem(await identityUsage(ours.id, {}, other.auth), 404, 'not_found');

    await t.http.delete(`/v1/identities/${ours.id}`).set(org.auth).expect(204);
    expectProblem(await identityUsage(ours.id), 404, 'not_found');
    expectProblem(await identityUsage('idt_0000000000000000000000'), 404, 'not_found');
    expectProblem(await identityUsage('not-an-identity'), 404, 'not_found');
  });

  it('needs identities:read', async () => {
    const identity = await createIdentity(org.auth);
    const viewer = await createKey(t.http, org.auth, { name: 'viewer, no identities', role: 'viewer' });
    expectProblem(await identityUsage(identity.id, {}, viewer.auth), 403, 'forbidden');
    const reader = await createKey(t.http, org.auth, {
      name: 'identities reader',
      role: await customRole({ identities: ['read'] }),
    });
    await identityUsage(identity.id, {}, reader.auth).expect(200);
  });
});

async function customRole(permissions: Record<string, string[]>): Promise<string> {
  const name = `usage_reader_${++sequence}`;
  await t.http.post('/v1/roles').set(org.auth).send({ role_name: name, permissions }).expect(201);
  return name;
}

describe('GET /v1/usage?group_by=identity', () => {
  it('lists the identities whose keys were used, most requests first, leaving out keys without one and deleted identities', async () => {
    const own = await signUpOrganization(t.http, 'Identity totals');
    const busy = await createIdentity(own.auth, 'busy');
    const quiet = await createIdentity(own.auth, 'quiet');
    const doomed = await createIdentity(own.auth, 'doomed');
    await createIdentity(own.auth, 'idle');
    const busyKeys = [
      await createKey(t.http, own.auth, { name: 'busy one', role: 'viewer', identity_id: busy.id }),
      await createKey(t.http, own.auth, {
        name: 'busy two',
        identity_id: busy.id,
        credits: { remaining: 10, refill: null },
      }),
    ];
    const quietKey = await createKey(t.http, own.auth, { name: 'quiet', identity_id: quiet.id });
    const doomedKey = await createKey(t.http, own.auth, { name: 'doomed', identity_id: doomed.id });
    const loose = await createKey(t.http, own.auth, { name: 'no identity' });

    await verify(busyKeys[0]).expect(200);
    await t.http.get('/v1/api-keys').set(busyKeys[0].auth).expect(403);
    for (let i = 0; i < 2; i++) await verify(busyKeys[1]).expect(200);
    await verify(quietKey).expect(200);
    await verify(doomedKey).expect(200);
    for (let i = 0; i < 5; i++) await verify(loose).expect(200);

    const { value } = await pollUntil(
      async () => (await organizationUsage({ group_by: 'identity' }, own.auth).expect(200)).body as Json,
      (body) => body.data.length === 3 && body.data[0].requests === 4,
      { timeoutMs: READABLE_WITHIN_MS, intervalMs: 100 },
    );
    // Usage reaches the database in batches: the keys' rows may land a flush after the identities'.
    const { value: byKey } = await pollUntil(
      async () => (await organizationUsage({}, own.auth).expect(200)).body as Json,
      (body) => body.data.length === 5 && body.data[0].requests === 5,
      { timeoutMs: READABLE_WITHIN_MS, intervalMs: 100 },
    );
    const row = (identity: Json, requests: number, allowed: number, creditsSpent = 0) => ({
      identity_id: identity.id,
      external_id: identity.external_id,
      requests,
      allowed,
      denied: requests - allowed,
      credits_spent: creditsSpent,
    });
    // quiet and doomed tie on requests: by identity id.
    const tied = [row(quiet, 1, 1), row(doomed, 1, 1)].sort((a, b) =>
      a.identity_id < b.identity_id ? -1 : 1,
    );
    expect(value).toEqual({
      from: expect.any(String),
      to: expect.any(String),
      data: [row(busy, 4, 3, 2), ...tied],
    });
    // The same range as by key: the 24 hours that end with the current one.
    expect(Date.parse(value.to) - Date.parse(value.from)).toBe(23 * 3_600_000);
    expect(Object.keys(value.data[0]).sort()).toEqual(
      ['allowed', 'credits_spent', 'denied', 'external_id', 'identity_id', 'requests'].sort(),
    );

    // A deleted identity is left out (its key detached first: a named identity cannot be deleted).
    await attach(doomedKey, null, own.auth);
    await t.http.delete(`/v1/identities/${doomed.id}`).set(own.auth).expect(204);
    const afterDelete = (await organizationUsage({ group_by: 'identity' }, own.auth).expect(200)).body;
    expect(afterDelete.data).toEqual([row(busy, 4, 3, 2), row(quiet, 1, 1)]);

    // By key (the default, or asked for) lists the keys, the one without an identity first.
    expect(byKey.data[0]).toMatchObject({ key_id: loose.id, requests: 5 });
    expect(byKey.data).toHaveLength(5);
    expect((await organizationUsage({ group_by: 'key' }, own.auth).expect(200)).body).toEqual(byKey);

    // A range without usage lists nothing; another organization sees none of these identities.
    const earlier = await organizationUsage(
      { group_by: 'identity', from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z' },
      own.auth,
    ).expect(200);
    expect(earlier.body.data).toEqual([]);
    const stranger = await signUpOrganization(t.http, 'Identity totals, stranger');
    expect((await organizationUsage({ group_by: 'identity' }, stranger.auth).expect(200)).body.data).toEqual(
      [],
    );
  });

  it.each([['identities'], ['IDENTITY'], ['']])('refuses group_by=%j with a field error', async (value) => {
    const problem = expectProblem(await organizationUsage({ group_by: value }), 400, 'validation_failed');
    expect(problem.errors).toEqual([
      { field: 'group_by', message: 'group_by must be one of key, identity, client' },
    ]);
  });

  it('refuses group_by given twice', async () => {
    const problem = expectProblem(
      await organizationUsage({ group_by: ['identity', 'identity'] }),
      400,
      'validation_failed',
    );
    expect(problem.errors?.map((e) => e.field)).toEqual(['group_by']);
  });

  it('needs identities:read as well as api_keys:read', async () => {
    const keysOnly = await createKey(t.http, org.auth, {
      name: 'keys reader',
      role: await customRole({ api_keys: ['read'] }),
    });
    await organizationUsage({}, keysOnly.auth).expect(200);
    await organizationUsage({ group_by: 'key' }, keysOnly.auth).expect(200);
    const refused = expectProblem(
      await organizationUsage({ group_by: 'identity' }, keysOnly.auth),
      403,
      'forbidden',
    );
    expect(refused.detail).toMatch(/identities:read/);

    const identitiesOnly = await createKey(t.http, org.auth, {
      name: 'identities reader only',
      role: await customRole({ identities: ['read'] }),
    });
    expectProblem(await organizationUsage({ group_by: 'identity' }, identitiesOnly.auth), 403, 'forbidden');

    const both = await createKey(t.http, org.auth, {
      name: 'both readers',
      role: await customRole({ api_keys: ['read'], identities: ['read'] }),
    });
    await organizationUsage({ group_by: 'identity' }, both.auth).expect(200);
  });
});
