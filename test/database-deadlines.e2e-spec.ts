import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { FakeAgentServer, gate, type Gate } from './support/agent-server';
import { expectProblem, signUpOrganization } from './support/factories';
import { createKey, pollUntil } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

const HAS_POSTGRES = Boolean(process.env.GATEHOUSE_TEST_SERVER_URL);
/** A request with no answer after this long is hung: far past every deadline the app sets itself. */
const GIVE_UP_MS = 60_000;
/** How long a test waits for what it is about at most: a deadline for a hang, never a bound on speed. */
const EVENTUALLY_MS = 60_000;

/**
 * Deadlines and shares of the database on the request path: busy task workers never starve requests of
 * connections (the pool holds DATABASE_POOL_SIZE for requests on top of the worker's few, which its
 * statements share however many runs are in flight), and a
 * statement that cannot finish in DATABASE_STATEMENT_TIMEOUT_MS answers 503 instead of hanging.
 */
describe('the database on the request path', () => {
  /** An app with 12 task workers, each running a task of a slow http agent that answers only when released. */
  async function busyWorkers(env: Record<string, string> = {}) {
    const agentServer = await FakeAgentServer.start();
    const held: Gate = gate();
    const app = await startTestApp({
      env: {
        WORKER_CONCURRENCY: '12',
        WORKER_POLL_MS: '50',
        ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
        // The burst below sends 30 requests of one key at once: the per-key cap (20 by default) is not
        // what these tests are about, and a fast server would otherwise refuse some of them (429).
        MAX_CONCURRENT_REQUESTS_PER_KEY: '100',
        ...env,
      },
    });
    const close = async () => {
      held.release();
      await app.close();
      await agentServer.close();
    };
    try {
      const org = await signUpOrganization(app.http, 'Busy workers');
      const key = await createKey(app.http, org.auth, { role: 'developer', type: 'service' });
      const url = agentServer.on('/slow', async () => {
        await held.promise;
        return { status: 200, json: { done: true } };
      });
      const agent = await app.http
        .post('/v1/agents')
        .set(org.auth)
        .send({ name: 'slow', type: 'http', config: { url } })
        .expect(201);
      for (let i = 0; i < 16; i++) {
        await app.http
          .post('/v1/tasks')
          .set(key.auth)
          .send({ instruction: `task ${i}`, agent_type: 'http', agent_id: agent.body.id })
          .expect(202);
      }
      const busy = await pollUntil(
        async () => agentServer.requestsTo('/slow').length,
        (count) => count === 12,
        { timeoutMs: EVENTUALLY_MS },
      );
      expect(busy.value).toBe(12);
      return { app, key, close };
    } catch (error) {
      await close();
      throw error;
    }
  }

  /** Verify and a task list, 15 of each at once: the statuses, and how long all of them took (printed). */
  async function burst(app: TestApp, auth: { Authorization: string }) {
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        i % 2 === 0
          ? app.http.get('/v1/auth/verify').set(auth).timeout(GIVE_UP_MS)
          : app.http.get('/v1/tasks?limit=5').set(auth).timeout(GIVE_UP_MS),
      ),
    );
    return { statuses: answers.map((res) => res.status), elapsedMs: Date.now() - started };
  }

  // A starved request waits for the pool's acquire deadline (5 s) and gets 503, so "all 200" is what
  // says none was starved; how long the burst took is the machine's, printed and never asserted.

  it('keeps answering while 12 task workers run slow agents (no connection is held while an agent runs; PGlite too)', async () => {
    const { app, key, close } = await busyWorkers();
    try {
      const { statuses, elapsedMs } = await burst(app, key.auth);
      expect(statuses).toEqual(statuses.map(() => 200));
      console.log(`30 requests, 12 workers running slow agents: ${elapsedMs} ms`);
    } finally {
      await close();
    }
  });

  (HAS_POSTGRES ? it : it.skip)(
    "keeps DATABASE_POOL_SIZE connections for requests while the worker's statements wait (12 runs, one renewal)",
    async () => {
      const { app, key, close } = await busyWorkers({ DATABASE_POOL_SIZE: '10' });
      const locker = new Client({ connectionString: app.databaseUrl });
      // Outside the locker's transaction, which would see one snapshot of pg_stat_activity throughout.
      const observer = new Client({ connectionString: app.databaseUrl });
      try {
        await locker.connect();
        await observer.connect();
        // Another session holds the tasks table against writes, as a busy database holds a statement: the
        // worker's lease renewal (one statement for its 12 running tasks) waits on it, holding a
        // connection (reads of tasks go on).
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE tasks IN SHARE MODE');
        const waiting = await pollUntil(
          async () =>
            Number(
              (
                await observer.query(
                  `SELECT count(*) AS n FROM pg_stat_activity
                    WHERE datname = current_database() AND application_name = 'gatehouse'
                      AND wait_event_type = 'Lock'`,
                )
              ).rows[0].n,
            ),
          // A heartbeat every 2 s. With a statement per running task (one connection each) these were
          // 12, more than the request share; the worker's statements now wait on its 4 connections.
          (n) => n >= 1,
          { timeoutMs: EVENTUALLY_MS },
        );
        expect(waiting.value).toBeGreaterThanOrEqual(1);
        await new Promise((resolve) => setTimeout(resolve, 2_500)); // another heartbeat passes
        const stillWaiting = await observer.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'gatehouse' AND wait_event_type = 'Lock'`,
        );
        expect(Number(stillWaiting.rows[0].n)).toBeLessThanOrEqual(4);

        const { statuses, elapsedMs } = await burst(app, key.auth);
        console.log(
          `30 requests, ${waiting.value} worker statements waiting, DATABASE_POOL_SIZE=10: ${elapsedMs} ms, statuses ${[...new Set(statuses)].join(',')}`,
        );
        expect(statuses).toEqual(statuses.map(() => 200));
      } finally {
        await locker.query('ROLLBACK').catch(() => undefined);
        await locker.end().catch(() => undefined);
        await observer.end().catch(() => undefined);
        await close();
      }
    },
  );

  (HAS_POSTGRES ? it : it.skip)(
    'answers 503 database_unavailable when a statement passes DATABASE_STATEMENT_TIMEOUT_MS, and serves again after',
    async () => {
      let app: TestApp | undefined;
      let locker: Client | undefined;
      try {
        app = await startTestApp({
          env: {
            DATABASE_STATEMENT_TIMEOUT_MS: '500',
            TOKEN_SIGNING_SECRET: randomBytes(32).toString('hex'),
            API_KEY_HASH_SECRET: randomBytes(32).toString('hex'),
          },
        });
        const org = await signUpOrganization(app.http, 'Slow statements');
        const key = await createKey(app.http, org.auth, { role: 'viewer', type: 'service' });
        // Another session holds the keys table: the key lookup waits on its lock, as on a stuck statement.
        locker = new Client({ connectionString: app.databaseUrl });
        await locker.connect();
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');

        const started = Date.now();
        // The table stays locked until the test lets it go: an answer at all, and a 503, is the statement's
        // deadline (without it the lookup waits for the lock, and the client gives up after GIVE_UP_MS).
        const res = await app.http.get('/v1/auth/verify').set(key.auth).timeout(GIVE_UP_MS);
        const elapsedMs = Date.now() - started;
        expectProblem(res, 503, 'database_unavailable');
        expect(res.headers['retry-after']).toEqual(expect.stringMatching(/^\d+$/));
        console.log(`verify with the keys table locked, statement timeout 500 ms: 503 after ${elapsedMs} ms`);

        await locker.query('ROLLBACK');
        await app.http.get('/v1/auth/verify').set(key.auth).expect(200);
      } finally {
        await locker?.end().catch(() => undefined);
        await app?.close();
      }
    },
  );
});
