import { Logger } from '@nestjs/common';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, Server, Socket } from 'node:net';
import { Client } from 'pg';
import type TestAgent from 'supertest/lib/agent';
import { expectProblem, signUpOrganization, SignedUpOrganization } from '../support/factories';
import { HAS_POSTGRES, sharedSecrets } from '../support/instances';
import { Auth, createKey, pollUntil, sleep } from '../support/keys';
import { hasRedisServer, OwnRedis } from '../support/own-redis';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Credits are exact across instances whatever Redis does (the contract), a key's own and an identity's
 * shared one alike. Two instances spend one balance of N in a paced burst, and in the middle of it Redis goes away while the burst goes on:
 * - killed and started again (empty), 12 times: never more than N accepted in all; once Redis is back
 *   it is spent in again, both instances and the row show N minus what was accepted, and exactly the
 *   rest is accepted after;
 * - paused and resumed (a hang: calls time out, and what was sent may still run when it resumes), 6
 *   times: never more than N accepted, and the instances and the row agree. A spend whose outcome was
 *   unknown counts as spent, so here a credit may be lost, never spent twice;
 * - cut off from one of the two instances only (a partition; the other still reaches it): exactly N
 *   accepted.
 * Uses a Redis server of its own, never the shared one; needs PostgreSQL (two instances cannot share
 * an embedded database).
 */

jest.setTimeout(600_000);

const RUNNABLE = HAS_POSTGRES && hasRedisServer();
const describeIfRunnable = RUNNABLE ? describe : describe.skip;
if (!RUNNABLE)
  console.warn('credits-redis-stop fault suite skipped: it needs DATABASE_URL and redis-server.');

const N = 40;
/** Requests in the burst: fewer than N, so that what is left shows whether the ledger lost a spend. */
const BURST = 30;
/** Workers per instance, each waiting PACE_MS between its requests: the burst lasts about a second. */
const WORKERS = 3;
const PACE_MS = 60;
/** Redis goes once this many requests were sent. */
const FAULT_AFTER = 10;
/** How long a hang lasts: past the command deadline (REDIS_COMMAND_TIMEOUT_MS, 500 ms by default). */
const HANG_MS = 1_500;
/** Requests in flight at any moment of a burst: the most a fault can leave with an unknown outcome. */
const IN_FLIGHT = 2 * WORKERS;
/** How long a poll waits for what must follow (Redis spent in again, a write-back): never a bound on speed. */
const EVENTUALLY_MS = 60_000;

const verify = (http: TestAgent, auth: Auth) => http.get('/v1/auth/verify').set(auth);

/** What one trial saw; the test asserts on all trials together, so the figures are complete. */
interface Trial {
  /** Requests accepted in all: the burst, the probe for Redis, the rest of the balance. */
  accepted: number;
  /** Whether a verify's balance was Redis's again once it was back. */
  onRedisAgain: boolean;
  /** N minus what was accepted before the rest was spent, and the balance A, B and the row showed then. */
  expectedLeft: number;
  shown: { a: number; b: number; row: number };
}

describeIfRunnable('credits through a Redis stop or hang on two instances', () => {
  const env = { ...sharedSecrets(), RATE_LIMIT_FAILURE_MODE: 'open' };
  let redis: OwnRedis | undefined;
  let a: TestApp | undefined;
  let b: TestApp | undefined;
  let database: Client | undefined;
  let org: SignedUpOrganization;

  beforeAll(async () => {
    redis = await OwnRedis.start();
    a = await startTestApp({ env: { ...env, REDIS_URL: redis.url } });
    b = await startTestApp({ databaseUrl: a.databaseUrl, env: { ...env, REDIS_URL: redis.url } });
    database = new Client({ connectionString: a.databaseUrl });
    await database.connect();
    org = await signUpOrganization(a.http, 'Credits outage');
  });

  afterAll(async () => {
    await database?.end();
    await b?.close();
    await a?.close();
    await redis?.close();
  });

  /**
   * A balance of N to spend: a key's own, or (the same ledger, another table) an identity's shared by
   * the key it names; `auth` is the key's either way.
   */
  interface Balance {
    id: string;
    auth: Auth;
    table: 'api_keys' | 'identities';
    path: string;
  }
  async function newBalance(holder: 'key' | 'identity'): Promise<Balance> {
    const limits = { role: 'viewer', rate_limit: { requests_per_minute: 10_000 } };
    if (holder === 'key') {
      const key = await createKey(a!.http, org.auth, { ...limits, credits: { remaining: N } });
      return { id: key.id, auth: key.auth, table: 'api_keys', path: `/v1/api-keys/${key.id}` };
    }
    const identity = await a!.http
      .post('/v1/identities')
      .set(org.auth)
      .send({ external_id: `cus_outage_${Date.now()}_${Math.random()}`, credits: { remaining: N } })
      .expect(201);
    const key = await createKey(a!.http, org.auth, { ...limits, identity_id: identity.body.id });
    return {
      id: identity.body.id,
      auth: key.auth,
      table: 'identities',
      path: `/v1/identities/${identity.body.id}`,
    };
  }

  const rowBalance = async ({ table, id }: Pick<Balance, 'table' | 'id'>): Promise<number> =>
    Number(
      (await database!.query(`SELECT credits_remaining FROM ${table} WHERE id = $1`, [id])).rows[0]
        .credits_remaining,
    );
  const redisBalance = (keyId: string): string =>
    spawnSync(
      'redis-cli',
      ['-p', String(redis!.port), 'HGET', `${a!.config.REDIS_KEY_PREFIX}gatehouse:credits:${keyId}`, 'r'],
      {
        encoding: 'utf8',
      },
    ).stdout.trim();
  const shownBalance = async (http: TestAgent, { path }: Pick<Balance, 'path'>): Promise<number> =>
    (await http.get(path).set(org.auth).expect(200)).body.credits.remaining;

  /** One trial: the burst through `fault`, then the rest of the balance spent. */
  async function trial(fault: () => Promise<void>, holder: 'key' | 'identity'): Promise<Trial> {
    const key = await newBalance(holder);
    // Both instances hold the key and have spent in Redis before it goes.
    await verify(a!.http, key.auth).expect(200);
    await verify(b!.http, key.auth).expect(200);
    let accepted = 2;
    let sent = 2;
    let faulted: Promise<void> | undefined;
    const spend = async (http: TestAgent): Promise<boolean> => {
      const res = await verify(http, key.auth);
      if (res.status === 200) accepted += 1;
      else expectProblem(res, 429, 'credits_exhausted');
      return res.status === 200;
    };

    const worker = async (http: TestAgent) => {
      while (sent < BURST) {
        sent += 1;
        await spend(http);
        faulted ??= sent >= FAULT_AFTER ? fault() : undefined;
        await sleep(PACE_MS);
      }
    };
    await Promise.all(Array.from({ length: 2 * WORKERS }, (_, i) => worker(i % 2 ? b!.http : a!.http)));
    await faulted;

    // Redis is spent in again: a verify's balance is the one Redis holds.
    const onRedisAgain = (
      await pollUntil(
        async () => {
          const res = await verify(a!.http, key.auth);
          if (res.status === 200) accepted += 1;
          return res.status === 200 && String(res.body.credits_remaining) === redisBalance(key.id);
        },
        (done) => done,
        { timeoutMs: EVENTUALLY_MS, intervalMs: 100 },
      )
    ).value;

    // The balance is N minus what was accepted, on both instances and (written back) in the row.
    const expectedLeft = N - accepted;
    // Both instances and the row agree once the last write-back has landed (polled: a loaded machine
    // may take a while; a disagreement that lasts is what fails).
    const a1 = await shownBalance(a!.http, key);
    const shown = {
      a: a1,
      b: (
        await pollUntil(
          () => shownBalance(b!.http, key),
          (n) => n === a1,
          { timeoutMs: EVENTUALLY_MS },
        )
      ).value,
      row: (
        await pollUntil(
          () => rowBalance(key),
          (n) => n === a1,
          { timeoutMs: EVENTUALLY_MS },
        )
      ).value,
    };

    // The rest is spent, alternately on A and B, and then nothing more.
    for (let i = 0; accepted <= 2 * N && (await spend(i % 2 ? b!.http : a!.http)); i++);
    return { accepted, onRedisAgain, expectedLeft, shown };
  }

  async function trials(
    count: number,
    fault: () => Promise<void>,
    name: string,
    holder: 'key' | 'identity' = 'key',
  ): Promise<Trial[]> {
    const started = Date.now();
    const seen: Trial[] = [];
    for (let i = 0; i < count; i++) seen.push(await trial(fault, holder));
    // The figures the issue asks for, whatever the outcome.
    const exact = seen.filter((t) => [t.shown.a, t.shown.b, t.shown.row].every((n) => n === t.expectedLeft));
    console.log(
      `${holder} credits through a Redis ${name}: ${count} trials of N=${N} in ${Math.round((Date.now() - started) / 1000)} s; ` +
        `accepted ${JSON.stringify(seen.map((t) => t.accepted))}; overspent in ${seen.filter((t) => t.accepted > N).length}; ` +
        `balance N - accepted on A, B and the row in ${exact.length}`,
    );
    return seen;
  }

  /** Redis killed and started again. */
  const kill = () => redis!.stop().then(() => redis!.start());
  /** Redis hung (it stops answering) for HANG_MS, then answering again. */
  const hang = async () => {
    redis!.pause();
    await sleep(HANG_MS);
    redis!.resume();
  };

  /**
   * What every trial must show, whatever the fault: never more than N accepted, the instances answering
   * again once Redis does, and A, B and the row showing one balance. A spend in flight when Redis dies or
   * hangs has an unknown outcome: it counts as spent (lost, never granted twice), so at most the requests
   * in flight at that moment are missing from the balance, and never more than what was not accepted is
   * left.
   */
  function expectNeverOverspent(seen: Trial[]): void {
    expect(seen.filter((t) => t.accepted > N)).toEqual([]);
    expect(seen.filter((t) => !t.onRedisAgain)).toEqual([]);
    for (const t of seen) {
      expect(t.shown).toEqual({ a: t.shown.a, b: t.shown.a, row: t.shown.a });
      expect(t.shown.a).toBeLessThanOrEqual(t.expectedLeft);
      expect(t.expectedLeft - t.shown.a).toBeLessThanOrEqual(IN_FLIGHT);
    }
  }

  it('never accepts more than N (a spend in flight at the kill may be lost, never granted twice) in 12 trials each killing Redis in the middle of the burst', async () => {
    expectNeverOverspent(await trials(12, kill, 'stop'));
  });

  it('never accepts more than N in 6 trials each hanging Redis in the middle of the burst', async () => {
    expectNeverOverspent(await trials(6, hang, 'hang'));
  });

  // An identity's balance is spent by the same ledger as a key's (another table): the same guarantees,
  // in fewer trials.
  it("never overspends an identity's shared balance in 6 trials killing Redis and 4 hanging it", async () => {
    expectNeverOverspent([
      ...(await trials(6, kill, 'stop', 'identity')),
      ...(await trials(4, hang, 'hang', 'identity')),
    ]);
  });

  it('accepts exactly N when one instance is cut off from Redis and the other is not', async () => {
    // B reaches Redis through a proxy that the test closes: a partition between B and Redis only.
    const proxy = await RedisProxy.start(redis!.port);
    const partitioned = await startTestApp({
      databaseUrl: a!.databaseUrl,
      env: { ...env, REDIS_URL: proxy.url },
    });
    // The instance that keeps Redis gets a command deadline no loaded CI machine reaches: a reply that
    // arrives after the deadline is a spend in flight, lost by design (the trials above allow for it),
    // and this test is about the partition, not about a healthy connection timing out.
    const healthy = await startTestApp({
      databaseUrl: a!.databaseUrl,
      env: { ...env, REDIS_URL: redis!.url, REDIS_COMMAND_TIMEOUT_MS: '5000' },
    });
    try {
      const key = await createKey(healthy.http, org.auth, {
        role: 'viewer',
        credits: { remaining: N },
        rate_limit: { requests_per_minute: 10_000 },
      });
      await verify(healthy.http, key.auth).expect(200);
      await verify(partitioned.http, key.auth).expect(200);
      let accepted = 2;
      // The ledger warns when a write-back took longer than its lease's margin (a machine loaded past
      // a few hundred ms of delay): a hand-over meanwhile may then have lost the spends in flight.
      const lateWriteBacks: string[] = [];
      const logWarning = Logger.prototype.warn;
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(function (this: Logger, ...args) {
        if (String(args[0]).startsWith('credit write-back took')) lateWriteBacks.push(String(args[0]));
        return logWarning.apply(this, args);
      });
      await proxy.cut();
      const worker = async (http: TestAgent) => {
        for (let i = 0; i < N; i++) {
          const res = await verify(http, key.auth);
          if (res.status === 200) accepted += 1;
          else expectProblem(res, 429, 'credits_exhausted');
          await sleep(PACE_MS / 2);
        }
      };
      await Promise.all(
        Array.from({ length: 2 * WORKERS }, (_, i) => worker(i % 2 ? partitioned.http : healthy.http)),
      );
      warn.mockRestore();
      console.log(
        `credits with one instance cut off from Redis: ${accepted} of N=${N} accepted`,
        lateWriteBacks,
      );
      // Exactly N; only a write-back the ledger itself reported late may have cost the requests in flight.
      if (lateWriteBacks.length === 0) expect(accepted).toBe(N);
      else expect(N - accepted).toBeLessThanOrEqual(IN_FLIGHT);
      expect(accepted).toBeLessThanOrEqual(N);
      const balance = { path: `/v1/api-keys/${key.id}`, table: 'api_keys' as const, id: key.id };
      expect(await shownBalance(healthy.http, balance)).toBe(0);
      expect(await shownBalance(partitioned.http, balance)).toBe(0);
      expect(
        (
          await pollUntil(
            () => rowBalance(balance),
            (n) => n === 0,
            { timeoutMs: EVENTUALLY_MS },
          )
        ).value,
      ).toBe(0);
    } finally {
      await partitioned.close();
      await healthy.close();
      await proxy.cut();
    }
  });
});

/** A TCP proxy to a Redis port; `cut()` closes it and every connection through it, and refuses new ones. */
class RedisProxy {
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server) {}

  static async start(targetPort: number): Promise<RedisProxy> {
    const server = createServer();
    const proxy = new RedisProxy(server);
    server.on('connection', (client) => {
      const upstream = connect(targetPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        proxy.sockets.add(socket);
        socket.on('close', () => proxy.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async cut(): Promise<void> {
    if (!this.server.listening) return;
    const closed = once(this.server, 'close');
    this.server.close();
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}
