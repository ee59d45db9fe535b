import { Client } from 'pg';
import { listAll, signUpOrganization } from '../support/factories';
import { Auth, createKey, pollUntil, sleep } from '../support/keys';
import { canCreateClusters, OwnPostgres } from '../support/own-postgres';
import { hasRedisServer, OwnRedis } from '../support/own-redis';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Nothing counted or audited is dropped in an outage. Usage counts every request whose key resolved,
 * whatever answered it (503 `rate_limiter_unavailable` while Redis is down in closed mode included), and
 * the usage and `key.denied` audit entries recorded while PostgreSQL is down wait in memory and are
 * written once it is back: the counts equal the answers, the denial counts equal the refusals, and the
 * audit chain still verifies. Each test uses a Redis server (and the second a PostgreSQL cluster) of
 * its own, never the shared ones.
 */

interface Answer {
  status: number;
  code?: string;
}

/** Answers by `status code` (`200`, `503 rate_limiter_unavailable`), for the figures and the failure message. */
function tally(answers: readonly Answer[]): Record<string, number> {
  const byOutcome: Record<string, number> = {};
  for (const { status, code } of answers) {
    const id = code ? `${status} ${code}` : String(status);
    byOutcome[id] = (byOutcome[id] ?? 0) + 1;
  }
  return byOutcome;
}

interface UsageTotals {
  requests: number;
  allowed: number;
  denied_by_reason: Record<string, number>;
}

/** The key's usage over its default range (the last 24 hours), summed over the buckets. */
async function usageOf(app: TestApp, auth: Auth, keyId: string): Promise<UsageTotals> {
  const res = await app.http.get(`/v1/api-keys/${keyId}/usage`).set(auth);
  const totals: UsageTotals = { requests: 0, allowed: 0, denied_by_reason: {} };
  if (res.status !== 200) return totals;
  for (const bucket of res.body.data as (UsageTotals & { start: string })[]) {
    totals.requests += bucket.requests;
    totals.allowed += bucket.allowed;
    for (const [reason, n] of Object.entries(bucket.denied_by_reason)) {
      totals.denied_by_reason[reason] = (totals.denied_by_reason[reason] ?? 0) + n;
    }
  }
  return totals;
}

/** What usage must show for a key that got these answers, every one after its key resolved. */
function expectedUsage(answers: readonly Answer[]): UsageTotals {
  const expected: UsageTotals = { requests: answers.length, allowed: 0, denied_by_reason: {} };
  for (const { status, code } of answers) {
    // Refusals of the key check carry their code; anything answered after it passed was allowed.
    if (status < 400 || !code || !isKeyCheckRefusal(code)) expected.allowed += 1;
    else expected.denied_by_reason[code] = (expected.denied_by_reason[code] ?? 0) + 1;
  }
  return expected;
}

/** How long a poll waits for what must follow: a deadline for a hang, never a bound on speed. */
const EVENTUALLY_MS = 60_000;

const KEY_CHECK_REFUSALS = new Set(['ip_not_allowed', 'forbidden', 'rate_limiter_unavailable']);
const isKeyCheckRefusal = (code: string): boolean => KEY_CHECK_REFUSALS.has(code);

/** Sum of `details.count` over a key's `key.denied` entries, by reason. */
async function deniedInAudit(app: TestApp, auth: Auth, keyId: string): Promise<Record<string, number>> {
  const entries = await listAll<{ details: { reason: string; count: number } }>(
    app.http,
    `/v1/audit-log?action=key.denied&key_id=${keyId}`,
    auth,
  );
  const byReason: Record<string, number> = {};
  for (const { details } of entries)
    byReason[details.reason] = (byReason[details.reason] ?? 0) + details.count;
  return byReason;
}

(hasRedisServer() ? describe : describe.skip)('usage through a Redis outage, closed mode', () => {
  let redis: OwnRedis | undefined;
  let app: TestApp | undefined;

  afterAll(async () => {
    await app?.close();
    await redis?.close();
  });

  it('counts every answer of a key, the 503 rate_limiter_unavailable ones included', async () => {
    redis = await OwnRedis.start();
    app = await startTestApp({ env: { REDIS_URL: redis.url, RATE_LIMIT_FAILURE_MODE: 'closed' } });
    const t = app;
    const org = await signUpOrganization(t.http, 'Usage outage');
    const key = await createKey(t.http, org.auth, { role: 'viewer', type: 'service' });

    const answers: Answer[] = [];
    const send = async (path: string): Promise<void> => {
      const res = await t.http.get(path).set(key.auth);
      answers.push({ status: res.status, code: res.body?.code });
    };
    // verify and a route it may read are allowed (or 503 while Redis is down); /v1/api-keys is forbidden.
    const round = async (): Promise<void> => {
      await send('/v1/auth/verify');
      await send('/v1/agents');
      await send('/v1/api-keys');
    };
    for (let i = 0; i < 5; i++) await round();

    await redis.stop();
    for (let i = 0; i < 20; i++) await round();
    const down = tally(answers);
    expect(down['503 rate_limiter_unavailable']).toBeGreaterThan(0);

    await redis.start();
    await pollUntil(
      () => t.http.get('/health/ready'),
      (res) => res.status === 200,
      { timeoutMs: EVENTUALLY_MS },
    );
    for (let i = 0; i < 5; i++) await round();

    const expected = expectedUsage(answers);
    const counted = await pollUntil(
      () => usageOf(t, org.auth, key.id),
      (usage) => usage.requests >= expected.requests,
      { timeoutMs: EVENTUALLY_MS, intervalMs: 250 },
    );
    console.info(
      `usage through a Redis outage (closed mode): counted ${counted.value.requests} of ${answers.length} answered`,
      tally(answers),
    );
    expect(counted.value).toEqual(expected);
  });
});

const POSTGRES_RUNNABLE = canCreateClusters() && hasRedisServer();
if (!POSTGRES_RUNNABLE)
  console.warn(
    'usage and audit through a PostgreSQL outage skipped: it needs pg_createcluster and redis-server.',
  );

(POSTGRES_RUNNABLE ? describe : describe.skip)('usage and audit through a PostgreSQL outage', () => {
  let cluster: OwnPostgres | undefined;
  let redis: OwnRedis | undefined;
  let app: TestApp | undefined;
  let database: Client | undefined;

  afterAll(async () => {
    await database?.end().catch(() => undefined);
    await app?.close({ keepData: true }).catch(() => undefined);
    await redis?.close();
    await cluster?.close();
  });

  it('keeps the usage and key.denied entries of refusals answered while it is down, and writes them once it is back', async () => {
    cluster = await OwnPostgres.create();
    const databaseUrl = await cluster.createDatabase();
    // Redis carries cache invalidations, so cached keys stay trusted while PostgreSQL is away.
    redis = await OwnRedis.start();
    app = await startTestApp({
      databaseUrl,
      env: { REDIS_URL: redis.url, AUDIT_DENIAL_WINDOW_SECONDS: '1' },
    });
    const t = app;
    const org = await signUpOrganization(t.http, 'Audit outage');
    // Refused by its allowed_ips (the test client is on loopback), and a viewer refused on key management.
    const fenced = await createKey(t.http, org.auth, {
      role: 'viewer',
      type: 'service',
      allowed_ips: ['203.0.113.7'],
    });
    const viewer = await createKey(t.http, org.auth, { role: 'viewer', type: 'service' });

    const answers = new Map<string, Answer[]>([
      [fenced.id, []],
      [viewer.id, []],
    ]);
    const send = async (keyId: string, auth: Auth, path: string): Promise<Answer> => {
      const res = await t.http.get(path).set(auth);
      const answer = { status: res.status, code: res.body?.code };
      answers.get(keyId)!.push(answer);
      return answer;
    };
    const round = async (): Promise<void> => {
      await send(fenced.id, fenced.auth, '/v1/auth/verify');
      await send(viewer.id, viewer.auth, '/v1/api-keys');
      await send(viewer.id, viewer.auth, '/v1/auth/verify');
    };
    // Both keys are cached, and the first denial of each is written, before the outage.
    await round();
    const firstDenials = await pollUntil(
      async () => [await deniedInAudit(t, org.auth, fenced.id), await deniedInAudit(t, org.auth, viewer.id)],
      ([ofFenced, ofViewer]) => ofFenced.ip_not_allowed >= 1 && ofViewer.forbidden >= 1,
      { timeoutMs: EVENTUALLY_MS, intervalMs: 100 },
    );
    expect(firstDenials.value.map((byReason, i) => byReason[i ? 'forbidden' : 'ip_not_allowed'])).toEqual([
      1, 1,
    ]);

    cluster.stop();
    const stoppedAt = Date.now();
    // Long enough for denial windows to close (and new ones to open) while nothing can be written, and
    // enough rounds for the refusals counted below, however slowly a loaded machine answers them.
    for (let rounds = 0; rounds < 11 || Date.now() - stoppedAt < 3_500; rounds++) {
      await round();
      await sleep(25);
    }
    const refusalsDuringOutage = [...answers.values()]
      .flat()
      .filter((a) => a.code === 'ip_not_allowed' || a.code === 'forbidden').length;
    // More than 20 refusals, or the failure shows what the rounds were answered instead (seen once on a
    // machine loaded by a parallel `npm run bench`: 2 refusals in all, the other answers not recorded).
    const answered = tally([...answers.values()].flat());
    expect(refusalsDuringOutage > 20 ? 'more than 20 refusals' : { refusalsDuringOutage, answered }).toBe(
      'more than 20 refusals',
    );
    await cluster.start();
    for (let i = 0; i < 3; i++) await round();

    const refusals = (keyId: string): Record<string, number> =>
      expectedUsage(answers.get(keyId)!).denied_by_reason;
    const counted = await pollUntil(
      async () => ({
        fencedUsage: await usageOf(t, org.auth, fenced.id),
        viewerUsage: await usageOf(t, org.auth, viewer.id),
        fencedAudit: await deniedInAudit(t, org.auth, fenced.id).catch(() => ({})),
        viewerAudit: await deniedInAudit(t, org.auth, viewer.id).catch(() => ({})),
      }),
      (now) =>
        now.fencedUsage.requests >= answers.get(fenced.id)!.length &&
        now.viewerUsage.requests >= answers.get(viewer.id)!.length &&
        (now.fencedAudit as Record<string, number>).ip_not_allowed >= refusals(fenced.id).ip_not_allowed &&
        (now.viewerAudit as Record<string, number>).forbidden >= refusals(viewer.id).forbidden,
      { timeoutMs: EVENTUALLY_MS, intervalMs: 250 },
    );
    console.info('usage and audit through a PostgreSQL outage:', {
      fenced: {
        answered: answers.get(fenced.id)!.length,
        usage_requests: counted.value.fencedUsage.requests,
        refused: refusals(fenced.id),
        audited: counted.value.fencedAudit,
      },
      viewer: {
        answered: answers.get(viewer.id)!.length,
        usage_requests: counted.value.viewerUsage.requests,
        refused: refusals(viewer.id),
        audited: counted.value.viewerAudit,
        answers: tally(answers.get(viewer.id)!),
      },
    });
    expect(counted.value).toEqual({
      fencedUsage: expectedUsage(answers.get(fenced.id)!),
      viewerUsage: expectedUsage(answers.get(viewer.id)!),
      fencedAudit: refusals(fenced.id),
      viewerAudit: refusals(viewer.id),
    });
    const integrity = await t.http.get('/v1/audit-log/integrity').set(org.auth).expect(200);
    expect(integrity.body).toMatchObject({ valid: true, first_invalid_id: null });

    // Shutdown writes nothing twice: the tables hold exactly what the API showed.
    await t.close({ keepData: true });
    app = undefined;
    database = new Client({ connectionString: databaseUrl });
    await database.connect();
    const usageRows = await database.query<{ key_id: string; count: string }>(
      `SELECT key_id, SUM(count)::text AS count FROM key_usage_hourly WHERE key_id = ANY($1) GROUP BY key_id`,
      [[fenced.id, viewer.id]],
    );
    const deniedRows = await database.query<{ key_id: string; count: string }>(
      `SELECT key_id, SUM((details->>'count')::int)::text AS count FROM audit_entries
        WHERE action = 'key.denied' AND key_id = ANY($1) GROUP BY key_id`,
      [[fenced.id, viewer.id]],
    );
    const byKey = (rows: { key_id: string; count: string }[]) =>
      Object.fromEntries(rows.map((row) => [row.key_id, Number(row.count)]));
    expect(byKey(usageRows.rows)).toEqual({
      [fenced.id]: answers.get(fenced.id)!.length,
      [viewer.id]: answers.get(viewer.id)!.length,
    });
    expect(byKey(deniedRows.rows)).toEqual({
      [fenced.id]: refusals(fenced.id).ip_not_allowed,
      [viewer.id]: refusals(viewer.id).forbidden,
    });
  });
});
