import type { Response } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { describeWithPostgres, sharedSecrets } from './support/instances';
import { sleep } from './support/keys';
import { queueTask, startWithHeldAgent } from './support/held-agent';
import { startTestApp, TestApp } from './support/test-app';

/**
 * `GET /v1/tasks/{id}?wait=N` (contract, "Agent runs"): answers as soon as the task is no longer queued or
 * running, or after N seconds with its state then; N is 1..60. The instances here run no workers, so a
 * task stays queued until it is cancelled: the cancel is the end the wait hears of.
 */

jest.setTimeout(60_000);

type Auth = SignedUpOrganization['auth'];

/** Starts a waiting read and answers it with how long it took, in ms from now. */
function timedWait(http: TestAgent, auth: Auth, id: string, wait: number | string) {
  const started = Date.now();
  return http
    .get(`/v1/tasks/${id}`)
    .query({ wait })
    .set(auth)
    .then((res: Response) => ({ res, elapsedMs: Date.now() - started }));
}

describe('GET /v1/tasks/{id}?wait=N', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  beforeAll(async () => {
    t = await startTestApp();
    org = await signUpOrganization(t.http);
  });
  afterAll(() => t.close());

  it('answers as soon as the task ends, not when N runs out', async () => {
    const id = await queueTask(t.http, org.auth);
    const waiting = timedWait(t.http, org.auth, id, 30);
    await sleep(300);
    await t.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
    const { res, elapsedMs } = await waiting;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'cancelled' });
    expect(elapsedMs).toBeGreaterThanOrEqual(300);
    expect(elapsedMs).toBeLessThan(5_000);
  });

  it('answers at once for a task that has ended already', async () => {
    const id = await queueTask(t.http, org.auth);
    await t.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
    const { res, elapsedMs } = await timedWait(t.http, org.auth, id, 30);
    expect(res.body.status).toBe('cancelled');
    expect(elapsedMs).toBeLessThan(1_000);
  });

  it('answers after N seconds with the task as it is then', async () => {
    const id = await queueTask(t.http, org.auth);
    const { res, elapsedMs } = await timedWait(t.http, org.auth, id, 1);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'queued' });
    expect(elapsedMs).toBeGreaterThanOrEqual(950);
    expect(elapsedMs).toBeLessThan(4_000);
  });

  it.each([['0'], ['61'], ['1.5'], ['soon']])('refuses wait=%s with 400, before waiting', async (wait) => {
    const id = await queueTask(t.http, org.auth);
    const { res, elapsedMs } = await timedWait(t.http, org.auth, id, wait);
    expectProblem(res, 400);
    expect(elapsedMs).toBeLessThan(1_000);
  });

  it("answers 404 for another organization's task, without waiting", async () => {
    const id = await queueTask(t.http, org.auth);
    const other = await signUpOrganization(t.http);
    const { res, elapsedMs } = await timedWait(t.http, other.auth, id, 30);
    expectProblem(res, 404);
    expect(elapsedMs).toBeLessThan(1_000);
  });
});

describe('GET /v1/tasks/{id}?wait=N on a task a worker runs', () => {
  let held: Awaited<ReturnType<typeof startWithHeldAgent>>;
  beforeAll(async () => (held = await startWithHeldAgent({ answer: 42 })));
  afterAll(() => held?.close());

  it('answers with the result as soon as the worker records it', async () => {
    const org = await signUpOrganization(held.t.http);
    const id = await held.queueHeldTask(org.auth);
    const waiting = timedWait(held.t.http, org.auth, id, 30);
    await sleep(1_300);
    const releasedAt = Date.now();
    held.release();
    const { res: answer } = await waiting;
    expect(answer.body).toMatchObject({ status: 'succeeded', result: { answer: 42 } });
    expect(Date.now() - releasedAt).toBeLessThan(500);
  });
});

describeWithPostgres('GET /v1/tasks/{id}?wait=N across instances')(
  'GET /v1/tasks/{id}?wait=N across instances',
  () => {
    let a: TestApp;
    let b: TestApp;
    beforeAll(async () => {
      const env = sharedSecrets();
      a = await startTestApp({ env });
      b = await startTestApp({ env, databaseUrl: a.databaseUrl });
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    it('wakes a wait on B when A ends the task (LISTEN/NOTIFY), well before its next look', async () => {
      const org = await signUpOrganization(a.http);
      const id = await queueTask(a.http, org.auth);
      const waiting = timedWait(b.http, org.auth, id, 30);
      // The wait also looks again every second: the cancel lands between two of those looks, so an
      // answer within half a second of it came from the notification.
      await sleep(1_300);
      const cancelledAt = Date.now();
      await a.http.post(`/v1/tasks/${id}/cancel`).set(org.auth).expect(200);
      const { res } = await waiting;
      expect(res.body).toMatchObject({ id, status: 'cancelled' });
      expect(Date.now() - cancelledAt).toBeLessThan(500);
    });
  },
);
