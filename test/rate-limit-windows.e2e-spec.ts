import type { Response, Test } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { Auth, createKey } from './support/keys';
import { ManualClock } from './support/manual-clock';
import { startTestApp, TestApp } from './support/test-app';

/**
 * RATE_LIMIT_WINDOW over HTTP, at a window's edge: the same requests against an instance counting
 * sliding windows (the default) and one counting fixed windows. Both count in this process (REDIS_URL
 * unset for them), where windows read the app's Clock, so the test moves time across the edge instead of
 * waiting for it; the Redis script reads Redis's clock and is tested across an edge in
 * src/rate-limits/sliding-window.storage.spec.ts, and shared by instances in test/multi-instance.
 */

const N = 5;
/** The start of a minute: sliding windows' edges fall on whole minutes, and a fixed window opens here. */
const T = Date.parse('2026-05-04T12:00:00Z');

const verify = (agent: TestAgent, auth: Auth): Test => agent.get('/v1/auth/verify').set(auth);

async function sequentially(n: number, send: () => Test): Promise<Response[]> {
  const responses: Response[] = [];
  for (let i = 0; i < n; i++) responses.push(await send());
  return responses;
}
const statuses = (responses: Response[]): number[] => responses.map((res) => res.status);
const passed = (responses: Response[]): number => responses.filter((res) => res.status === 200).length;

interface Instance {
  t: TestApp;
  clock: ManualClock;
  org: SignedUpOrganization;
}

async function startInstance(window: 'sliding' | 'fixed' | undefined): Promise<Instance> {
  const clock = new ManualClock(T);
  const t = await startTestApp({
    clock,
    env: { REDIS_URL: undefined, ...(window ? { RATE_LIMIT_WINDOW: window } : {}) },
  });
  return { t, clock, org: await signUpOrganization(t.http, `Windows ${window ?? 'default'}`) };
}

let sliding: Instance;
let fixed: Instance;
beforeAll(async () => {
  // No RATE_LIMIT_WINDOW: the default is sliding. One after the other: on PGlite each instance runs its
  // engine on this file's one thread, and two starting together on a loaded machine kept each other's first
  // connection past its deadline.
  sliding = await startInstance(undefined);
  fixed = await startInstance('fixed');
});
afterAll(async () => {
  await Promise.all([sliding?.t.close(), fixed?.t.close()]);
});

/**
 * One request at the start of a minute, N more in its last second, N more half a second into the next
 * minute: each answer, by when it was sent.
 */
async function acrossTheEdge({ t, clock, org }: Instance, start: number) {
  const key = await createKey(t.http, org.auth, { rate_limit: { requests_per_minute: N } });
  clock.set(start);
  const first = await sequentially(1, () => verify(t.http, key.auth));
  clock.set(start + 59_000);
  const before = await sequentially(N, () => verify(t.http, key.auth));
  clock.set(start + 60_500);
  const after = await sequentially(N, () => verify(t.http, key.auth));
  return { key, first, before, after };
}

describe("a key's per-minute limit at a window's edge", () => {
  it(`sliding (the default): N=${N} in a minute, however the requests fall around the edge`, async () => {
    const { key, first, before, after } = await acrossTheEdge(sliding, T);
    expect(statuses(first)).toEqual([200]);
    expect(statuses(before)).toEqual([200, 200, 200, 200, 429]);
    // The previous minute's 5 still count 59.5/60 of their weight: nothing more fits yet.
    expect(statuses(after)).toEqual(Array(N).fill(429));
    expect(passed([...first, ...before, ...after])).toBe(N);
    for (const refused of after) {
      expectProblem(refused, 429, 'rate_limited');
      expect(refused.headers['x-ratelimit-remaining']).toBe('0');
      // One fits once 5 * (60 - s) / 60 + 1 <= 5: 12 s into the minute, 11.5 s after these.
      expect(refused.headers['retry-after']).toBe('12');
    }

    // As Retry-After says: one request fits, and the budget it reports is spent.
    sliding.clock.set(T + 60_500 + 12_000);
    const again = await sequentially(2, () => verify(sliding.t.http, key.auth));
    expect(statuses(again)).toEqual([200, 429]);
    expect(again[0].headers['x-ratelimit-remaining']).toBe('0');
  });

  it(`fixed: the same requests get 2N-1 through within 1.5 s, 2N within a minute and half a second`, async () => {
    const { first, before, after } = await acrossTheEdge(fixed, T);
    expect(statuses(first)).toEqual([200]);
    expect(statuses(before)).toEqual([200, 200, 200, 200, 429]);
    // The window opened by the first request has ended: a whole new budget.
    expect(statuses(after)).toEqual(Array(N).fill(200));
    expect(passed([...before, ...after])).toBe(2 * N - 1);
    expect(passed([...first, ...before, ...after])).toBe(2 * N);
  });

  it('sliding: refused requests spend nothing, so a client that keeps retrying is served when Retry-After says', async () => {
    const { t, clock, org } = sliding;
    const key = await createKey(t.http, org.auth, { rate_limit: { requests_per_minute: 3 } });
    const start = T + 10 * 60_000;
    clock.set(start + 30_000);
    expect(statuses(await sequentially(3, () => verify(t.http, key.auth)))).toEqual([200, 200, 200]);
    // Retrying every second until the end of the minute, and 10 s into the next.
    let last: Response | undefined;
    for (let s = 31; s < 70; s++) {
      clock.set(start + s * 1000);
      last = await verify(t.http, key.auth);
      expectProblem(last, 429, 'rate_limited');
    }
    // 3 * (60 - s) / 60 + 1 <= 3 from 20 s into the minute: 11 s after the last refusal, at 69 s.
    expect(last!.headers['retry-after']).toBe('11');
    clock.set(start + 69_000 + 10_999);
    expectProblem(await verify(t.http, key.auth), 429, 'rate_limited');
    clock.set(start + 69_000 + 11_000);
    await verify(t.http, key.auth).expect(200);
  });
});
