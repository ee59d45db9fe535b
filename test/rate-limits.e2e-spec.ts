import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Response, Test } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { ConcurrencyStep } from '../src/access/steps/concurrency.step';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { Auth, createKey, pollUntil } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Per-key rate limits and the per-key concurrency cap over HTTP. `t` runs with the default limits
 * (600 a minute, 20000 an hour); `tuned` with small defaults (4 a minute, 6 an hour) and at most 2
 * requests of a key in flight.
 * With REDIS_URL set the counters live in Redis; everything here holds either way.
 */

jest.setTimeout(60_000);

const verify = (agent: TestAgent, auth: Auth): Test => agent.get('/v1/auth/verify').set(auth);

/** `n` requests one after the other (a rate limit is about counts, not overlap). */
async function sequentially(n: number, send: (i: number) => Promise<Response>): Promise<Response[]> {
  const responses: Response[] = [];
  for (let i = 0; i < n; i++) responses.push(await send(i));
  return responses;
}

const statuses = (responses: Response[]): number[] => responses.map((res) => res.status);
const header = (responses: Response[], name: string): (string | undefined)[] =>
  responses.map((res) => res.headers[name.toLowerCase()]);

function expectIntegerSeconds(value: string | undefined, min: number, max: number): void {
  expect(value).toMatch(/^\d+$/);
  expect(Number(value)).toBeGreaterThanOrEqual(min);
  expect(Number(value)).toBeLessThanOrEqual(max);
}

/**
 * The longest Retry-After a refusal may carry after a whole limit spent in a window of `seconds`: the
 * rest of the window; with sliding windows (the default) also the share of the next window it takes
 * for that count, weighted, to leave room for one more (src/rate-limits/sliding-window.storage.ts).
 */
const longestRetryAfter = (app: TestApp, seconds: number, limit: number): number =>
  app.config.RATE_LIMIT_WINDOW === 'sliding' ? seconds + Math.ceil(seconds / limit) : seconds;

/**
 * A 429 rate_limited refusal of a key whose `limit` a window of `seconds` spent, with a Retry-After it
 * allows. The refusal shows that window's spent budget as well, in the X-RateLimit-* headers of the
 * minute (no suffix) or the hour (`-hour`).
 */
function expectRateLimited(
  refused: Response,
  window: { suffix: '' | '-hour'; seconds: number; limit: number },
): void {
  expectProblem(refused, 429, 'rate_limited');
  expectIntegerSeconds(refused.headers['retry-after'], 1, longestRetryAfter(t, window.seconds, window.limit));
  expect(refused.headers[`x-ratelimit-limit${window.suffix}`]).toBe(String(window.limit));
  expect(refused.headers[`x-ratelimit-remaining${window.suffix}`]).toBe('0');
  expectIntegerSeconds(refused.headers[`x-ratelimit-reset${window.suffix}`], 1, window.seconds);
}

let t: TestApp;
let tuned: TestApp;
let org: SignedUpOrganization;
let tunedOrg: SignedUpOrganization;

beforeAll(async () => {
  t = await startTestApp({ env: { AUDIT_DENIAL_WINDOW_SECONDS: '1' } });
  tuned = await startTestApp({
    env: {
      DEFAULT_REQUESTS_PER_MINUTE: '4',
      DEFAULT_REQUESTS_PER_HOUR: '6',
      MAX_CONCURRENT_REQUESTS_PER_KEY: '2',
    },
  });
  org = await signUpOrganization(t.http, 'Limits');
  tunedOrg = await signUpOrganization(tuned.http, 'Tuned');
});
afterAll(async () => {
  await tuned?.close();
  await t?.close();
});

describe('the per-minute limit of a key', () => {
  it('accepts requests_per_minute requests, then answers 429 rate_limited with Retry-After', async () => {
    const key = await createKey(t.http, org.auth, { rate_limit: { requests_per_minute: 3 } });
    const responses = await sequentially(5, () => verify(t.http, key.auth));
    expect(statuses(responses)).toEqual([200, 200, 200, 429, 429]);
    for (const refused of responses.slice(3))
      expectRateLimited(refused, { suffix: '', seconds: 60, limit: 3 });
  });

  it('reports the budget in X-RateLimit-* headers, minute and hour, on every accepted key request', async () => {
    const key = await createKey(t.http, org.auth, {
      rate_limit: { requests_per_minute: 3, requests_per_hour: 50 },
    });
    const responses = await sequentially(3, () => verify(t.http, key.auth));
    expect(statuses(responses)).toEqual([200, 200, 200]);
    expect(header(responses, 'X-RateLimit-Limit')).toEqual(['3', '3', '3']);
    expect(header(responses, 'X-RateLimit-Remaining')).toEqual(['2', '1', '0']);
    expect(header(responses, 'X-RateLimit-Limit-hour')).toEqual(['50', '50', '50']);
    expect(header(responses, 'X-RateLimit-Remaining-hour')).toEqual(['49', '48', '47']);
    for (const res of responses) {
      expectIntegerSeconds(res.headers['x-ratelimit-reset'], 1, 60);
      expectIntegerSeconds(res.headers['x-ratelimit-reset-hour'], 1, 3600);
    }
    // The reset time is the current window's end: it does not move later as requests come in, unless a
    // window ended between them (sliding windows' edges fall on whole minutes, so the first would say 1).
    const resets = header(responses, 'X-RateLimit-Reset').map(Number);
    expect(resets[2]).toBeLessThanOrEqual(resets[0] === 1 ? 60 : resets[0]);
  });

  it('shows the service defaults in the headers of a key that sets no limit', async () => {
    const key = await createKey(t.http, org.auth);
    expect(key.body.rate_limit).toEqual({ requests_per_minute: null, requests_per_hour: null });
    const res = await verify(t.http, key.auth).expect(200);
    expect(res.headers['x-ratelimit-limit']).toBe('600');
    expect(res.headers['x-ratelimit-remaining']).toBe('599');
    expect(res.headers['x-ratelimit-limit-hour']).toBe('20000');
    expect(res.headers['x-ratelimit-remaining-hour']).toBe('19999');
  });
});

describe('the per-hour limit of a key', () => {
  it('answers 429 rate_limited once requests_per_hour is spent, even with minute budget left', async () => {
    const key = await createKey(t.http, org.auth, {
      rate_limit: { requests_per_minute: 100, requests_per_hour: 2 },
    });
    const responses = await sequentially(4, () => verify(t.http, key.auth));
    expect(statuses(responses)).toEqual([200, 200, 429, 429]);
    expect(header(responses.slice(0, 2), 'X-RateLimit-Remaining-hour')).toEqual(['1', '0']);
    expect(header(responses.slice(0, 2), 'X-RateLimit-Remaining')).toEqual(['99', '98']);
    // The spent budget is the hour's, and the refusal says so.
    for (const refused of responses.slice(2)) {
      expectRateLimited(refused, { suffix: '-hour', seconds: 3600, limit: 2 });
    }
  });
});

describe('the defaults, when a key sets no limit', () => {
  it('applies DEFAULT_REQUESTS_PER_MINUTE (4)', async () => {
    const key = await createKey(tuned.http, tunedOrg.auth);
    const responses = await sequentially(5, () => verify(tuned.http, key.auth));
    expect(statuses(responses)).toEqual([200, 200, 200, 200, 429]);
    expect(header(responses.slice(0, 4), 'X-RateLimit-Limit')).toEqual(['4', '4', '4', '4']);
    expectProblem(responses[4], 429, 'rate_limited');
  });

  it('applies DEFAULT_REQUESTS_PER_HOUR (6) to a key that sets only a minute limit', async () => {
    const key = await createKey(tuned.http, tunedOrg.auth, { rate_limit: { requests_per_minute: 100 } });
    const responses = await sequentially(7, () => verify(tuned.http, key.auth));
    expect(statuses(responses)).toEqual([200, 200, 200, 200, 200, 200, 429]);
    expect(responses[0].headers['x-ratelimit-limit']).toBe('100');
    expect(responses[0].headers['x-ratelimit-limit-hour']).toBe('6');
    expectProblem(responses[6], 429, 'rate_limited');
  });

  it("uses the key's own limit, above the default, when it sets one", async () => {
    const key = await createKey(tuned.http, tunedOrg.auth, {
      rate_limit: { requests_per_minute: 5, requests_per_hour: 10 },
    });
    const responses = await sequentially(6, () => verify(tuned.http, key.auth));
    expect(statuses(responses)).toEqual([200, 200, 200, 200, 200, 429]);
  });
});

describe('what a limit counts', () => {
  it('counts per key: a key at its limit leaves another key of the same owner untouched', async () => {
    const spent = await createKey(t.http, org.auth, { rate_limit: { requests_per_minute: 2 } });
    const other = await createKey(t.http, org.auth, { rate_limit: { requests_per_minute: 2 } });
    expect(statuses(await sequentially(3, () => verify(t.http, spent.auth)))).toEqual([200, 200, 429]);
    const fresh = await sequentially(2, () => verify(t.http, other.auth));
    expect(statuses(fresh)).toEqual([200, 200]);
    expect(header(fresh, 'X-RateLimit-Remaining')).toEqual(['1', '0']);
  });

  it('counts across routes: verify and GET /v1/api-keys share one budget', async () => {
    const key = await createKey(t.http, org.auth, { rate_limit: { requests_per_minute: 3 } });
    const responses = [
      await verify(t.http, key.auth),
      await t.http.get('/v1/api-keys').set(key.auth),
      await verify(t.http, key.auth),
      await t.http.get('/v1/api-keys').set(key.auth),
      await verify(t.http, key.auth),
    ];
    expect(statuses(responses)).toEqual([200, 200, 200, 429, 429]);
    expect(header(responses.slice(0, 3), 'X-RateLimit-Remaining')).toEqual(['2', '1', '0']);
    expectProblem(responses[3], 429, 'rate_limited');
  });

  it('counts whichever way the key is presented', async () => {
    const key = await createKey(t.http, org.auth, { rate_limit: { requests_per_minute: 3 } });
    const responses = [
      await t.http.get('/v1/auth/verify').set('Authorization', `Bearer ${key.key}`),
      await t.http.get('/v1/auth/verify').set('X-API-Key', key.key),
      await t.http.get('/v1/auth/verify').query({ api_key: key.key }),
      await t.http.get('/v1/auth/verify').set('X-API-Key', key.key),
    ];
    expect(statuses(responses)).toEqual([200, 200, 200, 429]);
  });

  it('spends no budget on requests refused for a missing permission', async () => {
    const key = await createKey(t.http, org.auth, {
      role: 'viewer',
      rate_limit: { requests_per_minute: 2 },
    });
    const forbidden = await sequentially(4, () => t.http.get('/v1/api-keys').set(key.auth));
    for (const res of forbidden) expectProblem(res, 403, 'forbidden');
    expect(statuses(await sequentially(3, () => verify(t.http, key.auth)))).toEqual([200, 200, 429]);
  });

  it('does not limit access tokens, and sends them no X-RateLimit headers', async () => {
    // The tuned instance's default is 4 a minute: a key would be refused long before the tenth call.
    const responses = await sequentially(10, () => tuned.http.get('/v1/api-keys').set(tunedOrg.auth));
    expect(statuses(responses)).toEqual(Array(10).fill(200));
    for (const res of responses) {
      expect(Object.keys(res.headers).filter((name) => name.startsWith('x-ratelimit'))).toEqual([]);
    }
  });

  it('applies a PATCHed limit to the next request of an already used key', async () => {
    const key = await createKey(t.http, org.auth, { rate_limit: { requests_per_minute: 100 } });
    const before = await verify(t.http, key.auth).expect(200);
    expect(before.headers['x-ratelimit-limit']).toBe('100');
    await t.http
      .patch(`/v1/api-keys/${key.id}`)
      .set(org.auth)
      .send({ rate_limit: { requests_per_minute: 2 } })
      .expect(200);
    // The window keeps its count (1 so far): one more request fits, the next does not.
    const after = await sequentially(2, () => verify(t.http, key.auth));
    expect(statuses(after)).toEqual([200, 429]);
    expect(after[0].headers['x-ratelimit-limit']).toBe('2');
    expect(after[0].headers['x-ratelimit-remaining']).toBe('0');
  });

  it('records refusals as key.denied with reason rate_limited and their count', async () => {
    const key = await createKey(t.http, org.auth, { rate_limit: { requests_per_minute: 1 } });
    expect(statuses(await sequentially(4, () => verify(t.http, key.auth)))).toEqual([200, 429, 429, 429]);
    const { value: entries } = await pollUntil(
      async () =>
        (
          await t.http
            .get('/v1/audit-log')
            .query({ action: 'key.denied', key_id: key.id, limit: 100 })
            .set(org.auth)
            .expect(200)
        ).body.data as Record<string, any>[],
      (found) => found.reduce((sum, entry) => sum + Number(entry.details.count), 0) >= 3,
    );
    expect(entries.reduce((sum, entry) => sum + Number(entry.details.count), 0)).toBe(3);
    for (const entry of entries) {
      expect(entry).toMatchObject({
        action: 'key.denied',
        key_id: key.id,
        actor: { type: 'api_key', id: key.id },
        details: { reason: 'rate_limited', limit: 1, window_seconds: 60 },
      });
    }
  });
});

describe('concurrent requests of one key (MAX_CONCURRENT_REQUESTS_PER_KEY=2)', () => {
  /**
   * A request that stays in flight for as long as the test wants: a multipart upload whose body is
   * still coming. Guards run before the file interceptor reads the body, so it holds its concurrency
   * slot from the moment it is admitted until the test ends (or abandons) the body.
   */
  interface HeldUpload {
    finish(): Promise<{ status: number; body: Record<string, unknown> }>;
    abandon(): void;
    /** Set when the server answered before the body ended (a refusal). */
    early: Promise<number>;
  }

  const BOUNDARY = 'gatehouse-held-upload';
  let server: http.Server;
  let port: number;

  function holdUpload(auth: Auth): HeldUpload {
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/files',
      headers: { ...auth, 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` },
    });
    req.on('error', () => undefined);
    const response = new Promise<http.IncomingMessage>((resolve) => req.once('response', resolve));
    req.write(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="held.txt"\r\n` +
        'Content-Type: text/plain\r\n\r\nthe first half, ',
    );
    return {
      early: response.then((res) => res.statusCode ?? 0),
      async finish() {
        req.end(`the second half\r\n--${BOUNDARY}--\r\n`);
        const res = await response;
        let text = '';
        for await (const chunk of res) text += String(chunk);
        return { status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> };
      },
      abandon: () => req.destroy(),
    };
  }

  /**
   * How many requests of the key the guard counts as in flight. Read only to know when the held
   * uploads have been admitted before probing; every assertion is on HTTP answers.
   */
  const inFlight = (keyId: string): number => tuned.app.get(ConcurrencyStep).inFlightOf(keyId);
  const waitForInFlight = async (keyId: string, count: number): Promise<void> => {
    const { value } = await pollUntil(
      async () => inFlight(keyId),
      (n) => n === count,
      { timeoutMs: 10_000, intervalMs: 5 },
    );
    expect(value).toBe(count);
  };

  let key: Awaited<ReturnType<typeof createKey>>;
  beforeAll(async () => {
    // A server of its own on the same application, so these raw clients share nothing with supertest.
    server = http.createServer(tuned.app.getHttpAdapter().getInstance());
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
    // An administrator key (it may upload) with room enough that rate limits never interfere.
    key = await createKey(tuned.http, tunedOrg.auth, {
      rate_limit: { requests_per_minute: 10_000, requests_per_hour: 100_000 },
    });
  });
  afterAll(() => {
    server?.closeAllConnections();
    server?.close();
  });

  it('answers 429 too_many_concurrent_requests beyond two in flight, on any route', async () => {
    const other = await createKey(tuned.http, tunedOrg.auth, {
      rate_limit: { requests_per_minute: 100, requests_per_hour: 100 },
    });
    const held = [holdUpload(key.auth), holdUpload(key.auth)];
    await waitForInFlight(key.id, 2);

    const third = await verify(tuned.http, key.auth);
    expectProblem(third, 429, 'too_many_concurrent_requests');
    expect(third.headers['retry-after']).toMatch(/^\d+$/);
    expectProblem(await tuned.http.get('/v1/api-keys').set(key.auth), 429, 'too_many_concurrent_requests');
    // A third upload is refused at once, before its body has even arrived.
    const refusedUpload = holdUpload(key.auth);
    expect(await refusedUpload.early).toBe(429);
    refusedUpload.abandon();

    // Another key and an access token are not held back.
    await verify(tuned.http, other.auth).expect(200);
    await tuned.http.get('/v1/api-keys').set(tunedOrg.auth).expect(200);

    // The two that hold the slots are served in full once their bodies arrive.
    const done = await Promise.all(held.map((upload) => upload.finish()));
    expect(done.map((res) => res.status)).toEqual([201, 201]);
    expect(done[0].body).toMatchObject({ filename: 'held.txt', size: 31 });
  });

  it('frees a slot when a request finishes', async () => {
    const [first, second] = [holdUpload(key.auth), holdUpload(key.auth)];
    await waitForInFlight(key.id, 2);
    expectProblem(await verify(tuned.http, key.auth), 429, 'too_many_concurrent_requests');

    expect((await first.finish()).status).toBe(201);
    // `second` is still in flight; the slot `first` held is free again.
    await verify(tuned.http, key.auth).expect(200);
    const third = holdUpload(key.auth);
    await waitForInFlight(key.id, 2);
    expectProblem(await verify(tuned.http, key.auth), 429, 'too_many_concurrent_requests');

    expect((await second.finish()).status).toBe(201);
    expect((await third.finish()).status).toBe(201);
    await verify(tuned.http, key.auth).expect(200);
  });

  it('frees the slot of a request whose client went away', async () => {
    const [first, second] = [holdUpload(key.auth), holdUpload(key.auth)];
    await waitForInFlight(key.id, 2);
    expectProblem(await verify(tuned.http, key.auth), 429, 'too_many_concurrent_requests');

    // Neither upload can ever finish now: only the connection closing can give their slots back.
    first.abandon();
    const { value: afterOne } = await pollUntil(
      () => verify(tuned.http, key.auth),
      (res) => res.status === 200,
      { timeoutMs: 5_000, intervalMs: 20 },
    );
    expect(afterOne.status).toBe(200);
    second.abandon();
    await waitForInFlight(key.id, 0);
    // Both slots are usable again.
    const both = [holdUpload(key.auth), holdUpload(key.auth)];
    await waitForInFlight(key.id, 2);
    expect((await Promise.all(both.map((upload) => upload.finish()))).map((res) => res.status)).toEqual([
      201, 201,
    ]);
  });

  it('gives back the credit of a request refused for concurrency: a refused request spends nothing', async () => {
    const credited = await createKey(tuned.http, tunedOrg.auth, {
      rate_limit: { requests_per_minute: 10_000, requests_per_hour: 100_000 },
      credits: { remaining: 5 },
    });
    const held = [holdUpload(credited.auth), holdUpload(credited.auth)];
    await waitForInFlight(credited.id, 2);
    for (let i = 0; i < 3; i++) {
      expectProblem(await verify(tuned.http, credited.auth), 429, 'too_many_concurrent_requests');
    }
    expect((await Promise.all(held.map((upload) => upload.finish()))).map((res) => res.status)).toEqual([
      201, 201,
    ]);
    // The two uploads spent two; the three refusals spent nothing.
    const body = (await tuned.http.get(`/v1/api-keys/${credited.id}`).set(tunedOrg.auth).expect(200)).body;
    expect(body.credits.remaining).toBe(3);
    expect((await verify(tuned.http, credited.auth).expect(200)).body.credits_remaining).toBe(2);
  });

  it('counts a verify of the key for another service (POST /v1/keys/verify) like one of its requests', async () => {
    const credited = await createKey(tuned.http, tunedOrg.auth, {
      rate_limit: { requests_per_minute: 10_000, requests_per_hour: 100_000 },
      credits: { remaining: 5 },
    });
    const verifyFor = async () =>
      (await tuned.http.post('/v1/keys/verify').set(tunedOrg.auth).send({ key: credited.key }).expect(200))
        .body;
    const held = [holdUpload(credited.auth), holdUpload(credited.auth)];
    await waitForInFlight(credited.id, 2);
    // Both slots taken: the verify is refused as a third request would be, and spends no credit.
    expect(await verifyFor()).toMatchObject({
      valid: false,
      code: 'too_many_concurrent_requests',
      key_id: credited.id,
      credits_remaining: 3,
    });
    expect((await Promise.all(held.map((upload) => upload.finish()))).map((res) => res.status)).toEqual([
      201, 201,
    ]);
    expect(await verifyFor()).toMatchObject({ valid: true, credits_remaining: 2 });
    // The verify's slot was the verify call's own: given back when its answer went out.
    await waitForInFlight(credited.id, 0);
  });
});
