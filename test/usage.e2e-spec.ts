import { rmSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { ApiKeyFormat } from '../src/api-keys/api-key-format';
import { UsageCounter } from '../src/usage/usage-counter';
import { bearer, expectProblem, SignedUpOrganization, signUpOrganization } from './support/factories';
import { Auth, createKey, CreatedKey, pollUntil } from './support/keys';
import { ManualClock } from './support/manual-clock';
import { dropTestDatabase, startTestApp, TestApp } from './support/test-app';

/**
 * Per-key usage over HTTP: every request of a key that resolved is counted by outcome, exactly and
 * readable within 10 seconds; the buckets of a range come oldest first with zeros; ranges round,
 * default and are bounded; another organization's key is a 404. The app's clock is a ManualClock so
 * that hours and days move when a test says so.
 */

const HOUR_MS = 3_600_000;
/** The contract's bound for a request to show in its key's usage. */
const READABLE_WITHIN_MS = 10_000;
/** What a bucket of a key that ran no tasks and spent no credits adds to its requests. */
const NO_RUNS = { tasks: 0, input_tokens: 0, output_tokens: 0, credits_spent: 0 };
const EMPTY = { requests: 0, allowed: 0, denied: 0, denied_by_reason: {}, ...NO_RUNS };

type Json = Record<string, any>;

const clock = new ManualClock(Date.parse('2030-05-10T13:20:00Z'));
let t: TestApp;
let org: SignedUpOrganization;

beforeAll(async () => {
  t = await startTestApp({ clock });
  org = await signUpOrganization(t.http, 'Usage');
});
afterAll(() => t?.close());

const verify = (auth: Auth) => t.http.get('/v1/auth/verify').set(auth);

function usageOf(key: { id: string }, query: Record<string, string> = {}, auth: Auth = org.auth) {
  return t.http.get(`/v1/api-keys/${key.id}/usage`).query(query).set(auth);
}

/** Polls a key's usage until `done` holds, for the contract's 10 seconds; answers the last body. */
async function usageWhen(key: { id: string }, done: (body: Json) => boolean, auth: Auth = org.auth) {
  const { value } = await pollUntil(
    async () => (await usageOf(key, {}, auth).expect(200)).body as Json,
    done,
    {
      timeoutMs: READABLE_WITHIN_MS,
      intervalMs: 100,
    },
  );
  return value;
}

const lastBucket = (body: Json): Json => body.data[body.data.length - 1];
const totalRequests = (body: Json): number =>
  body.data.reduce((sum: number, bucket: Json) => sum + bucket.requests, 0);

describe('counting', () => {
  let viewer: CreatedKey;
  let fenced: CreatedKey;
  let limited: CreatedKey;
  let switchedOff: CreatedKey;

  beforeAll(async () => {
    clock.set(Date.parse('2030-05-10T13:20:00Z'));
    viewer = await createKey(t.http, org.auth, { name: 'viewer key', role: 'viewer' });
    fenced = await createKey(t.http, org.auth, { name: 'fenced key', allowed_ips: ['203.0.113.7'] });
    limited = await createKey(t.http, org.auth, {
      name: 'limited key',
      rate_limit: { requests_per_minute: 2 },
    });
    switchedOff = await createKey(t.http, org.auth, { name: 'switched off' });

    for (let i = 0; i < 3; i++) expect((await verify(viewer.auth)).status).toBe(200);
    // The viewer role lacks api_keys:read.
    for (let i = 0; i < 2; i++) expect((await t.http.get('/v1/api-keys').set(viewer.auth)).status).toBe(403);
    for (let i = 0; i < 2; i++) expect((await verify(fenced.auth)).status).toBe(403);
    const limitedStatuses = [];
    for (let i = 0; i < 3; i++) limitedStatuses.push((await verify(limited.auth)).status);
    expect(limitedStatuses).toEqual([200, 200, 429]);

    await verify(switchedOff.auth).expect(200);
    await t.http.patch(`/v1/api-keys/${switchedOff.id}`).set(org.auth).send({ enabled: false }).expect(200);
    expect((await verify(switchedOff.auth)).status).toBe(401);
  });

  it('counts allowed and refused requests by reason, exactly, within 10 seconds', async () => {
    const expected = new Map<CreatedKey, Json>([
      [viewer, { requests: 5, allowed: 3, denied: 2, denied_by_reason: { forbidden: 2 } }],
      [fenced, { requests: 2, allowed: 0, denied: 2, denied_by_reason: { ip_not_allowed: 2 } }],
      [limited, { requests: 3, allowed: 2, denied: 1, denied_by_reason: { rate_limited: 1 } }],
      // A refusal after the key resolved (here the kill switch) counts too.
      [switchedOff, { requests: 2, allowed: 1, denied: 1, denied_by_reason: { key_disabled: 1 } }],
    ]);
    for (const [key, counts] of expected) {
      const body = await usageWhen(key, (b) => lastBucket(b).requests >= counts.requests);
      expect(lastBucket(body)).toEqual({ start: '2030-05-10T13:00:00.000Z', ...counts, ...NO_RUNS });
    }
    // Nothing more arrives later: each request was counted once.
    await t.app.get(UsageCounter).flush();
    expect(lastBucket((await usageOf(viewer).expect(200)).body)).toMatchObject({ requests: 5 });
  });

  it('answers the 24 hours ending with the current one by default, oldest first, zeros where unused', async () => {
    const { body } = await usageOf(viewer).expect(200);
    expect(body).toMatchObject({
      key_id: viewer.id,
      granularity: 'hour',
      from: '2030-05-09T14:00:00.000Z',
      to: '2030-05-10T13:00:00.000Z',
    });
    expect(body.data.map((b: Json) => b.start)).toEqual(
      Array.from({ length: 24 }, (_, i) =>
        new Date(Date.parse('2030-05-09T14:00:00Z') + i * HOUR_MS).toISOString(),
      ),
    );
    expect(body.data.slice(0, 23)).toEqual(
      body.data.slice(0, 23).map((b: Json) => ({ start: b.start, ...EMPTY })),
    );
  });

  it('puts requests in the hour the clock is in, and sums hours into UTC days', async () => {
    clock.set(Date.parse('2030-05-11T01:10:00Z'));
    for (let i = 0; i < 2; i++) await verify(viewer.auth).expect(200);
    await usageWhen(viewer, (b) => lastBucket(b).requests >= 2);

    const hours = (
      await usageOf(viewer, { from: '2030-05-10T13:59:59Z', to: '2030-05-11T01:30:00Z' }).expect(200)
    ).body;
    expect([hours.from, hours.to, hours.data.length]).toEqual([
      '2030-05-10T13:00:00.000Z',
      '2030-05-11T01:00:00.000Z',
      13,
    ]);
    expect(hours.data[0]).toMatchObject({ requests: 5, allowed: 3 });
    expect(hours.data[12]).toMatchObject({ requests: 2, allowed: 2, denied_by_reason: {} });
    expect(totalRequests(hours)).toBe(7);

    const days = (
      await usageOf(viewer, { granularity: 'day', from: '2030-05-09', to: '2030-05-11T23:00:00Z' }).expect(
        200,
      )
    ).body;
    expect(days).toMatchObject({
      granularity: 'day',
      from: '2030-05-09T00:00:00.000Z',
      to: '2030-05-11T00:00:00.000Z',
    });
    expect(days.data).toEqual([
      { start: '2030-05-09T00:00:00.000Z', ...EMPTY },
      {
        start: '2030-05-10T00:00:00.000Z',
        requests: 5,
        allowed: 3,
        denied: 2,
        denied_by_reason: { forbidden: 2 },
        ...NO_RUNS,
      },
      {
        start: '2030-05-11T00:00:00.000Z',
        requests: 2,
        allowed: 2,
        denied: 0,
        denied_by_reason: {},
        ...NO_RUNS,
      },
    ]);

    const defaultDays = (await usageOf(viewer, { granularity: 'day' }).expect(200)).body;
    expect([defaultDays.from, defaultDays.to, defaultDays.data.length]).toEqual([
      '2030-04-18T00:00:00.000Z',
      '2030-05-11T00:00:00.000Z',
      24,
    ]);
    // An offset is honoured before rounding: 02:30+02:00 is 00:30 UTC.
    const offset = (await usageOf(viewer, { from: '2030-05-11T02:30:00+02:00' }).expect(200)).body;
    expect([offset.from, offset.to]).toEqual(['2030-05-11T00:00:00.000Z', '2030-05-11T01:00:00.000Z']);
    const onlyTo = (await usageOf(viewer, { to: '2030-05-10T13:00:00Z' }).expect(200)).body;
    expect([onlyTo.from, onlyTo.to]).toEqual(['2030-05-09T14:00:00.000Z', '2030-05-10T13:00:00.000Z']);
  });
});

describe('ranges and access', () => {
  let key: CreatedKey;
  beforeAll(async () => {
    clock.set(Date.parse('2030-05-10T13:20:00Z'));
    key = await createKey(t.http, org.auth, { name: 'range key' });
  });

  it('answers at most 1000 buckets: 1000 is fine, 1001 is a 400', async () => {
    const to = Date.parse('2030-05-10T13:00:00Z');
    const thousand = await usageOf(key, {
      from: new Date(to - 999 * HOUR_MS).toISOString(),
      to: new Date(to).toISOString(),
    }).expect(200);
    expect(thousand.body.data).toHaveLength(1000);
    expect(thousand.body.data.every((b: Json) => b.requests === 0)).toBe(true);

    const tooMany = await usageOf(key, { from: new Date(to - 1000 * HOUR_MS).toISOString() });
    const problem = expectProblem(tooMany, 400, 'validation_failed');
    expect(problem.errors).toEqual([{ field: 'from', message: expect.stringMatching(/at most 1000/) }]);

    expectProblem(await usageOf(key, { granularity: 'day', from: '2027-01-01' }), 400, 'validation_failed');
    expectProblem(
      await t.http.get('/v1/usage').query({ from: '2029-01-01' }).set(org.auth),
      400,
      'validation_failed',
    );
  });

  it.each([
    [{ from: '2030-05-10T12:00:00Z', to: '2030-05-10T11:00:00Z' }, 'from'],
    [{ from: 'yesterday' }, 'from'],
    [{ to: '2030-02-30T00:00:00Z' }, 'to'],
    [{ to: '1714550400' }, 'to'],
    [{ granularity: 'week' }, 'granularity'],
    [{ bucket: 'hour' }, 'bucket'],
  ])('refuses %j with a validation problem on %s', async (query, field) => {
    const problem = expectProblem(
      await usageOf(key, query as Record<string, string>),
      400,
      'validation_failed',
    );
    expect(problem.errors?.map((e) => e.field)).toEqual([field]);
  });

  it("answers 404 for another organization's key, a deleted key and an id that is not one", async () => {
    const other = await signUpOrganization(t.http, 'Other');
    expectProblem(await usageOf(key, {}, other.auth), 404, 'not_found');
    const theirs = await createKey(t.http, other.auth, { name: 'theirs' });
    expectProblem(await usageOf(theirs), 404, 'not_found');

    const deleted = await createKey(t.http, org.auth, { name: 'deleted' });
    await t.http.delete(`/v1/api-keys/${deleted.id}`).set(org.auth).expect(204);
    expectProblem(await usageOf(deleted), 404, 'not_found');
    expectProblem(await usageOf({ id: 'not-a-key' }), 404, 'not_found');
  });

  it('needs api_keys:read', async () => {
    const viewer = await createKey(t.http, org.auth, { name: 'no read', role: 'viewer' });
    expectProblem(await usageOf(key, {}, viewer.auth), 403, 'forbidden');
    expectProblem(await t.http.get('/v1/usage').set(viewer.auth), 403, 'forbidden');
  });
});

describe('GET /v1/usage', () => {
  it("lists the organization's keys used in the range, most requests first, ties by key id", async () => {
    clock.set(Date.parse('2030-06-01T08:05:00Z'));
    const own = await signUpOrganization(t.http, 'Totals');
    const busy = await createKey(t.http, own.auth, { name: 'busy', role: 'viewer' });
    const twins = [
      await createKey(t.http, own.auth, { name: 'twin one' }),
      await createKey(t.http, own.auth, { name: 'twin two' }),
    ].sort((a, b) => (a.id < b.id ? -1 : 1));
    const gone = await createKey(t.http, own.auth, { name: 'gone' });
    await createKey(t.http, own.auth, { name: 'idle' });

    for (let i = 0; i < 3; i++) await verify(busy.auth).expect(200);
    await t.http.get('/v1/api-keys').set(busy.auth).expect(403);
    for (const twin of twins) await verify(twin.auth).expect(200);
    await verify(gone.auth).expect(200);
    await usageWhen(gone, (b) => lastBucket(b).requests === 1, own.auth);
    await t.http.delete(`/v1/api-keys/${gone.id}`).set(own.auth).expect(204);

    const { value } = await pollUntil(
      async () => (await t.http.get('/v1/usage').set(own.auth).expect(200)).body as Json,
      (body) => body.data.length === 3 && body.data[0].requests === 4,
      { timeoutMs: READABLE_WITHIN_MS, intervalMs: 100 },
    );
    expect(value).toEqual({
      from: '2030-05-31T09:00:00.000Z',
      to: '2030-06-01T08:00:00.000Z',
      data: [
        { key_id: busy.id, name: 'busy', requests: 4, allowed: 3, denied: 1, credits_spent: 0 },
        ...twins.map((twin) => ({
          key_id: twin.id,
          name: twin.body.name,
          requests: 1,
          allowed: 1,
          denied: 0,
          credits_spent: 0,
        })),
      ],
    });

    const earlier = await t.http
      .get('/v1/usage')
      .query({ from: '2030-05-01T00:00:00Z', to: '2030-06-01T07:59:59Z' })
      .set(own.auth)
      .expect(200);
    expect(earlier.body).toEqual({
      from: '2030-05-01T00:00:00.000Z',
      to: '2030-06-01T07:00:00.000Z',
      data: [],
    });
    // Another organization sees none of these keys.
    const stranger = await signUpOrganization(t.http, 'Stranger');
    expect((await t.http.get('/v1/usage').set(stranger.auth).expect(200)).body.data).toEqual([]);
  });
});

describe('GET /v1/usage/series', () => {
  let own: SignedUpOrganization;
  let reader: CreatedKey;
  let metered: CreatedKey;
  let gone: CreatedKey;
  const seriesOf = (query: Record<string, string> = {}, auth: Auth = own.auth) =>
    t.http.get('/v1/usage/series').query(query).set(auth);
  const sum = (rows: Json[], field: string): number => rows.reduce((total, row) => total + row[field], 0);
  const WEEK = { granularity: 'day', from: '2030-07-27', to: '2030-08-02T01:10:00Z' };

  beforeAll(async () => {
    clock.set(Date.parse('2030-08-01T22:30:00Z'));
    own = await signUpOrganization(t.http, 'Series');
    reader = await createKey(t.http, own.auth, { name: 'reader', role: 'viewer' });
    metered = await createKey(t.http, own.auth, { name: 'metered', credits: { remaining: 10 } });
    gone = await createKey(t.http, own.auth, { name: 'gone' });
    for (let i = 0; i < 3; i++) await verify(reader.auth).expect(200);
    // The viewer role lacks api_keys:read: a refusal after the key resolved, counted as denied.
    await t.http.get('/v1/api-keys').set(reader.auth).expect(403);
    for (let i = 0; i < 2; i++) await verify(metered.auth).expect(200);
    clock.set(Date.parse('2030-08-02T01:10:00Z'));
    for (let i = 0; i < 2; i++) await verify(reader.auth).expect(200);
    await verify(gone.auth).expect(200);
    // Written now rather than at the next one-second flush.
    await t.app.get(UsageCounter).flush();
  });

  it('sums every key of the organization per UTC day, oldest first, zeros where nothing was used', async () => {
    const { body } = await seriesOf(WEEK).expect(200);
    expect(body).toMatchObject({
      granularity: 'day',
      from: '2030-07-27T00:00:00.000Z',
      to: '2030-08-02T00:00:00.000Z',
    });
    expect(body.data.map((bucket: Json) => bucket.start)).toEqual(
      ['07-27', '07-28', '07-29', '07-30', '07-31', '08-01', '08-02'].map(
        (day) => `2030-${day}T00:00:00.000Z`,
      ),
    );
    expect(body.data.slice(0, 5)).toEqual(
      body.data.slice(0, 5).map((b: Json) => ({ start: b.start, ...EMPTY })),
    );
    expect(body.data[5]).toEqual({
      start: '2030-08-01T00:00:00.000Z',
      requests: 6,
      allowed: 5,
      denied: 1,
      denied_by_reason: { forbidden: 1 },
      ...NO_RUNS,
      credits_spent: 2,
    });
    expect(body.data[6]).toMatchObject({ requests: 3, allowed: 3, denied: 0, credits_spent: 0 });
  });

  it('adds up, day by day and hour by hour, to what GET /v1/usage lists for the same range', async () => {
    const range = { from: WEEK.from, to: WEEK.to };
    const keys = (await t.http.get('/v1/usage').query(range).set(own.auth).expect(200)).body;
    expect(keys.data).toHaveLength(3);
    for (const granularity of ['day', 'hour']) {
      const { body } = await seriesOf({ ...range, granularity }).expect(200);
      for (const field of ['requests', 'allowed', 'denied', 'credits_spent']) {
        expect([granularity, field, sum(body.data, field)]).toEqual([
          granularity,
          field,
          sum(keys.data, field),
        ]);
      }
    }
  });

  it("keeps a deleted key's requests, which the per-key list can no longer name", async () => {
    await t.http.delete(`/v1/api-keys/${gone.id}`).set(own.auth).expect(204);
    const keys = (
      await t.http.get('/v1/usage').query({ from: WEEK.from, to: WEEK.to }).set(own.auth).expect(200)
    ).body;
    expect(keys.data.map((row: Json) => row.key_id).sort()).toEqual([reader.id, metered.id].sort());
    const { body } = await seriesOf(WEEK).expect(200);
    expect(sum(body.data, 'requests')).toBe(sum(keys.data, 'requests') + 1);
  });

  it('answers the 24 hours that end with the current one by default', async () => {
    const { body } = await seriesOf().expect(200);
    expect(body).toMatchObject({
      granularity: 'hour',
      from: '2030-08-01T02:00:00.000Z',
      to: '2030-08-02T01:00:00.000Z',
    });
    expect(body.data).toHaveLength(24);
    expect(body.data[20]).toMatchObject({ start: '2030-08-01T22:00:00.000Z', requests: 6 });
    expect(body.data[23]).toMatchObject({ start: '2030-08-02T01:00:00.000Z', requests: 3 });
  });

  it('shows another organization none of it', async () => {
    const stranger = await signUpOrganization(t.http, 'Series stranger');
    const { body } = await seriesOf(WEEK, stranger.auth).expect(200);
    expect(body.data.every((bucket: Json) => bucket.requests === 0 && bucket.credits_spent === 0)).toBe(true);
  });

  it.each([
    [{ from: '2030-08-02', to: '2030-08-01' }, 'from'],
    [{ granularity: 'day', from: '2027-01-01', to: '2030-08-01' }, 'from'],
    [{ from: '2030-06-01' }, 'from'],
    [{ from: 'last week' }, 'from'],
    [{ to: '2030-02-30' }, 'to'],
    [{ granularity: 'month' }, 'granularity'],
    [{ group_by: 'identity' }, 'group_by'],
  ])('refuses %j with a validation problem on %s', async (query, field) => {
    const problem = expectProblem(await seriesOf(query), 400, 'validation_failed');
    expect(problem.errors?.map((e) => e.field)).toEqual([field]);
  });

  it('needs api_keys:read', async () => {
    expectProblem(await seriesOf({}, reader.auth), 403, 'forbidden');
  });
});

describe('what is not counted', () => {
  it('counts neither requests with an access token nor ones with an unknown or malformed key', async () => {
    clock.set(Date.parse('2030-07-01T10:00:00Z'));
    const marker = await createKey(t.http, org.auth, { name: 'marker' });
    const counter = t.app.get(UsageCounter);
    const database = t.app.get(DataSource);
    const countedSoFar = async (): Promise<number> => {
      await counter.flush();
      const [row] = await database.query<{ total: string }[]>(
        'SELECT COALESCE(SUM(count), 0)::text AS total FROM key_usage_hourly',
      );
      return Number(row.total);
    };
    const before = await countedSoFar();

    await t.http.get('/v1/api-keys').set(org.auth).expect(200);
    await t.http.get('/v1/usage').set(org.auth).expect(200);
    const unknownKey = new ApiKeyFormat('sk').generate();
    expect((await verify(bearer(unknownKey))).status).toBe(401);
    expect((await verify(bearer(`${unknownKey.slice(0, -1)}x`))).status).toBe(401);
    expect((await verify(bearer('sk_not-a-key'))).status).toBe(401);
    expect((await t.http.get('/v1/auth/verify').set('X-API-Key', unknownKey)).status).toBe(401);
    // One request of a real key, so the total shows the counter is working.
    await verify(marker.auth).expect(200);

    expect(await countedSoFar()).toBe(before + 1);
  });
});

describe('shutdown', () => {
  it('writes the counts still in memory when the app closes', async () => {
    const first = await startTestApp({ clock });
    let second: TestApp | undefined;
    let firstOpen = true;
    try {
      const own = await signUpOrganization(first.http, 'Closing');
      const key = await createKey(first.http, own.auth, { name: 'closing' });
      for (let i = 0; i < 3; i++) await first.http.get('/v1/auth/verify').set(key.auth).expect(200);
      // Counted just before closing: the one-second flush cannot have written it yet.
      first.app.get(UsageCounter).count(own.organizationId, { id: key.id, identity: null }, 'allowed');
      await first.close({ keepData: true });
      firstOpen = false;

      second = await startTestApp({
        embedded: !first.databaseUrl,
        databaseUrl: first.databaseUrl,
        dataDir: first.dataDir,
      });
      const rows = await second.app
        .get(DataSource)
        .query<{ outcome: string; count: string }[]>(
          'SELECT outcome, count::text AS count FROM key_usage_hourly WHERE key_id = $1',
          [key.id],
        );
      expect(rows).toEqual([{ outcome: 'allowed', count: '4' }]);
    } finally {
      if (firstOpen) await first.close({ keepData: true });
      await second?.close();
      if (first.databaseUrl) await dropTestDatabase(first.databaseUrl);
      rmSync(first.dataDir, { recursive: true, force: true });
    }
  });
});
