import {
  createUser,
  expectProblem,
  signUpOrganization,
  type SignedUpOrganization,
} from './support/factories';
import { describeWithPostgres, sharedSecrets } from './support/instances';
import { type Auth, createKey, pollUntil } from './support/keys';
import { OAuthTestClient } from './support/oauth-flow';
import { startTestApp, type TestApp } from './support/test-app';

/**
 * OAuth access tokens in usage (CONTRACT, "AI assistants"): every request presented with a token of a
 * grant is counted under that grant, allowed or refused by code, exactly across instances, and read at
 * GET /v1/oauth/grants/{id}/usage (by the grant's user, or with api_keys:read; another grant is 404) and
 * summed by client at GET /v1/usage?group_by=client. The keys' and identities' usage never include them.
 */

const PUBLIC_URL = 'http://gatehouse.test';
/** The contract's bound for a request to show in usage. */
const READABLE_WITHIN_MS = 10_000;
const NO_RUNS = { tasks: 0, input_tokens: 0, output_tokens: 0, credits_spent: 0 };
const bearer = (token: string): Auth => ({ Authorization: `Bearer ${token}` });

type Json = Record<string, any>;

const lastBucket = (body: Json): Json => body.data[body.data.length - 1];

describeWithPostgres('OAuth usage')('OAuth access tokens in usage', () => {
  let a: TestApp;
  let b: TestApp;
  let org: SignedUpOrganization;

  beforeAll(async () => {
    const env = { ...sharedSecrets(), PUBLIC_URL, OAUTH_REQUESTS_PER_MINUTE: '4' };
    a = await startTestApp({ env });
    b = await startTestApp({ databaseUrl: a.databaseUrl, env });
    org = await signUpOrganization(a.http, 'OAuth usage');
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  /** The newest grant `auth`'s user gave `client` (GET /v1/oauth/grants lists newest first). */
  async function grantOf(auth: Auth, client: OAuthTestClient): Promise<string> {
    const res = await a.http.get('/v1/oauth/grants').set(auth).expect(200);
    const grant = res.body.data.find((row: Json) => row.client.client_id === client.clientId);
    if (!grant) throw new Error(`no grant of ${client.clientId}: ${res.text}`);
    return grant.id as string;
  }

  const grantUsage = (grantId: string, auth: Auth, query: Record<string, string> = {}) =>
    a.http.get(`/v1/oauth/grants/${grantId}/usage`).query(query).set(auth);

  /** Polls a grant's usage until its current bucket shows `requests`, for the contract's 10 seconds. */
  async function grantUsageWhen(grantId: string, auth: Auth, requests: number): Promise<Json> {
    const { value } = await pollUntil(
      async () => (await grantUsage(grantId, auth).expect(200)).body as Json,
      (body) => lastBucket(body).requests >= requests,
      { timeoutMs: READABLE_WITHIN_MS, intervalMs: 100 },
    );
    return value;
  }

  it("counts a grant's requests on every instance, allowed and refused by code, read by its user and by an admin key", async () => {
    const member = await createUser(a.http, org, 'developer');
    const client = await OAuthTestClient.register(a.http, 'Usage Assistant');
    const token = await client.accessToken(member.email, { scope: 'agents:read' });
    const grantId = await grantOf(member.auth, client);

    await a.http.get('/v1/agents').set(bearer(token)).expect(200);
    await a.http.get('/v1/agents').set(bearer(token)).expect(200);
    await b.http.get('/v1/agents').set(bearer(token)).expect(200);
    // The grant does not carry tasks:create.
    expectProblem(
      await b.http.post('/v1/tasks').set(bearer(token)).send({ instruction: 'x', agent_type: 'echo' }),
      403,
      'forbidden',
    );

    const own = await grantUsageWhen(grantId, member.auth, 4);
    expect(own).toMatchObject({
      grant_id: grantId,
      client_id: client.clientId,
      client_name: 'Usage Assistant',
      granularity: 'hour',
    });
    expect(own.data).toHaveLength(24);
    expect(lastBucket(own)).toEqual({
      start: expect.any(String),
      requests: 4,
      allowed: 3,
      denied: 1,
      denied_by_reason: { forbidden: 1 },
      ...NO_RUNS,
    });

    // An administrator's key (api_keys:read) reads any grant of the organization, by day as well.
    const admin = await createKey(a.http, org.auth);
    const byDay = await grantUsage(grantId, admin.auth, { granularity: 'day' }).expect(200);
    expect(byDay.body.granularity).toBe('day');
    expect(lastBucket(byDay.body)).toMatchObject({ requests: 4, allowed: 3, denied: 1 });
    // The query rules are the keys' usage's.
    expectProblem(await grantUsage(grantId, admin.auth, { granularity: 'week' }), 400, 'validation_failed');

    // Another member without api_keys:read: as an unknown grant.
    const other = await createUser(a.http, org, 'developer');
    expectProblem(await grantUsage(grantId, other.auth), 404, 'not_found');
  });

  it("counts a request the grant's rate limit refused under rate_limited", async () => {
    const member = await createUser(a.http, org, 'developer');
    const client = await OAuthTestClient.register(a.http, 'Limited Assistant');
    const token = await client.accessToken(member.email);
    const grantId = await grantOf(member.auth, client);
    for (let i = 0; i < 4; i++) await a.http.get('/v1/agents').set(bearer(token)).expect(200);
    expectProblem(await a.http.get('/v1/agents').set(bearer(token)), 429, 'rate_limited');

    const usage = await grantUsageWhen(grantId, member.auth, 5);
    expect(lastBucket(usage)).toMatchObject({
      requests: 5,
      allowed: 4,
      denied: 1,
      denied_by_reason: { rate_limited: 1 },
    });
  });

  it('counts a token presented at a resource it was not issued for under invalid_token', async () => {
    const member = await createUser(a.http, org, 'developer');
    const client = await OAuthTestClient.register(a.http, 'MCP-only Assistant');
    const token = await client.accessToken(member.email, { resource: `${PUBLIC_URL}/mcp` });
    const grantId = await grantOf(member.auth, client);
    expectProblem(await a.http.get('/v1/agents').set(bearer(token)), 401, 'invalid_token');

    const usage = await grantUsageWhen(grantId, member.auth, 1);
    expect(lastBucket(usage)).toMatchObject({
      requests: 1,
      allowed: 0,
      denied: 1,
      denied_by_reason: { invalid_token: 1 },
    });
  });

  it('counts a token of a user deactivated since under the grant, as user_deactivated', async () => {
    const member = await createUser(a.http, org, 'developer');
    const client = await OAuthTestClient.register(a.http, 'Assistant of a leaver');
    const token = await client.accessToken(member.email);
    const grantId = await grantOf(member.auth, client);
    await a.http.get('/v1/agents').set(bearer(token)).expect(200);
    await a.http.post(`/v1/users/${member.id}/deactivate`).set(org.auth).expect(200);
    expectProblem(await b.http.get('/v1/agents').set(bearer(token)), 401, 'user_deactivated');

    const usage = await grantUsageWhen(grantId, org.auth, 2);
    expect(lastBucket(usage)).toMatchObject({
      requests: 2,
      allowed: 1,
      denied: 1,
      denied_by_reason: { user_deactivated: 1 },
    });
  });

  it("answers 404 for another organization's grant and for an unknown one", async () => {
    const elsewhere = await signUpOrganization(a.http, 'OAuth usage elsewhere');
    const client = await OAuthTestClient.register(a.http, 'Elsewhere Assistant');
    const token = await client.accessToken(elsewhere.email);
    await a.http.get('/v1/agents').set(bearer(token)).expect(200);
    const grantId = await grantOf(elsewhere.auth, client);
    await grantUsageWhen(grantId, elsewhere.auth, 1);

    expectProblem(await grantUsage(grantId, org.auth), 404, 'not_found');
    expectProblem(await grantUsage('grant_unknown', org.auth), 404, 'not_found');
    // Nor does its client show among this organization's.
    const clients = await a.http.get('/v1/usage').query({ group_by: 'client' }).set(org.auth).expect(200);
    expect(clients.body.data.map((row: Json) => row.client_id)).not.toContain(client.clientId);
  });

  it("sums each client's grants at GET /v1/usage?group_by=client, most requests first", async () => {
    const member = await createUser(a.http, org, 'developer');
    const busy = await OAuthTestClient.register(a.http, 'Busy Assistant');
    const quiet = await OAuthTestClient.register(a.http, 'Quiet Assistant');
    const memberToken = await busy.accessToken(member.email);
    const adminToken = await busy.accessToken(org.email);
    const quietToken = await quiet.accessToken(member.email);
    for (let i = 0; i < 2; i++) await a.http.get('/v1/agents').set(bearer(memberToken)).expect(200);
    for (let i = 0; i < 3; i++) await b.http.get('/v1/agents').set(bearer(adminToken)).expect(200);
    expectProblem(
      await a.http.post('/v1/tasks').set(bearer(adminToken)).send({ instruction: 'x', agent_type: 'echo' }),
      403,
      'forbidden',
    );
    await a.http.get('/v1/agents').set(bearer(quietToken)).expect(200);

    const rowOf = (body: Json, client: OAuthTestClient): Json | undefined =>
      body.data.find((row: Json) => row.client_id === client.clientId);
    const { value } = await pollUntil(
      async () =>
        (await a.http.get('/v1/usage').query({ group_by: 'client' }).set(org.auth).expect(200)).body as Json,
      (body) => rowOf(body, busy)?.requests === 6 && rowOf(body, quiet)?.requests === 1,
      { timeoutMs: READABLE_WITHIN_MS, intervalMs: 100 },
    );
    expect(value).toEqual({ from: expect.any(String), to: expect.any(String), data: expect.any(Array) });
    expect(rowOf(value, busy)).toEqual({
      client_id: busy.clientId,
      client_name: 'Busy Assistant',
      requests: 6,
      allowed: 5,
      denied: 1,
      credits_spent: 0,
    });
    expect(rowOf(value, quiet)).toEqual({
      client_id: quiet.clientId,
      client_name: 'Quiet Assistant',
      requests: 1,
      allowed: 1,
      denied: 0,
      credits_spent: 0,
    });
    const order = value.data.map((row: Json) => row.requests as number);
    expect(order).toEqual([...order].sort((x, y) => y - x));

    // A member without api_keys:read may not list them.
    expectProblem(
      await a.http.get('/v1/usage').query({ group_by: 'client' }).set(member.auth),
      403,
      'forbidden',
    );
  });

  it("leaves grants out of the keys' and identities' usage, and out of the organization's series", async () => {
    const fresh = await signUpOrganization(a.http, 'OAuth usage only');
    const client = await OAuthTestClient.register(a.http, 'Only Assistant');
    const token = await client.accessToken(fresh.email);
    const key = await createKey(a.http, fresh.auth);
    await a.http.get('/v1/agents').set(bearer(token)).expect(200);
    await a.http.get('/v1/agents').set(bearer(token)).expect(200);
    await a.http.get('/v1/agents').set(key.auth).expect(200);

    // Read with the user's dashboard token, which counts in no usage: the numbers stay still.
    const read = async (query: Record<string, string>, path = '/v1/usage') =>
      (await a.http.get(path).query(query).set(fresh.auth).expect(200)).body as Json;
    const { value } = await pollUntil(
      async () => ({ clients: await read({ group_by: 'client' }), keys: await read({}) }),
      ({ clients, keys }) => clients.data[0]?.requests === 2 && keys.data[0]?.requests === 1,
      { timeoutMs: READABLE_WITHIN_MS, intervalMs: 100 },
    );
    expect(value.clients.data).toEqual([
      expect.objectContaining({ client_id: client.clientId, requests: 2 }),
    ]);
    expect(value.keys.data).toEqual([
      { key_id: key.id, name: 'test key', requests: 1, allowed: 1, denied: 0, credits_spent: 0 },
    ]);
    expect((await read({ group_by: 'identity' })).data).toEqual([]);
    const series = await read({}, '/v1/usage/series');
    const seriesRequests = series.data.reduce((sum: number, bucket: Json) => sum + bucket.requests, 0);
    expect(seriesRequests).toBe(1);
  });
});
