import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { OAuthGrants } from '../src/oauth/oauth-grants';
import {
  createUser,
  expectProblem,
  signUpOrganization,
  type SignedUpOrganization,
} from './support/factories';
import { describeWithPostgres, expectWithinOneSecond, sharedSecrets } from './support/instances';
import { OAuthTestClient } from './support/oauth-flow';
import { startTestApp, type TestApp } from './support/test-app';

/**
 * OAuth access tokens as a credential of the key check (CONTRACT, "AI assistants"): a token acts for the
 * user who consented, with the granted scopes intersected with that user's permissions at each request;
 * it is accepted only at the resource it was issued for; a deactivated user's tokens and a revoked
 * grant's stop at once; its requests are rate-limited per grant and audited with the client named.
 */

const PUBLIC_URL = 'http://gatehouse.test';
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('OAuth access tokens as a credential', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  let client: OAuthTestClient;

  beforeAll(async () => {
    t = await startTestApp({ env: { PUBLIC_URL, OAUTH_REQUESTS_PER_MINUTE: '5' } });
    org = await signUpOrganization(t.http, 'OAuth credentials');
    client = await OAuthTestClient.register(t.http, 'Credential Assistant');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('acts for the consenting user at /v1 with the granted scopes only, and is audited with the client', async () => {
    const token = await client.accessToken(org.email, { scope: 'agents:read identities:create' });
    const agents = await t.http.get('/v1/agents').set(bearer(token)).expect(200);
    expect(agents.body.data.map((agent: { name: string }) => agent.name)).toContain('Echo');
    // The administrator holds tasks:create, but the grant does not.
    expectProblem(
      await t.http.post('/v1/tasks').set(bearer(token)).send({ instruction: 'x', agent_type: 'echo' }),
      403,
      'forbidden',
    );
    const created = await t.http
      .post('/v1/identities')
      .set(bearer(token))
      .send({ external_id: 'cus_oauth' })
      .expect(201);
    const audit = await t.http
      .get('/v1/audit-log')
      .query({ action: 'identity.created' })
      .set(org.auth)
      .expect(200);
    const entry = audit.body.data.find(
      (row: { details: { identity_id?: string } }) => row.details.identity_id === created.body.id,
    );
    expect(entry?.actor).toEqual({ type: 'user', id: org.userId, client_id: client.clientId });
  });

  it('is refused at a resource it was not issued for: invalid_token', async () => {
    const forRest = await client.accessToken(org.email);
    const forMcp = await client.accessToken(org.email, { resource: `${PUBLIC_URL}/mcp` });
    expectProblem(await t.http.get('/v1/agents').set(bearer(forMcp)), 401, 'invalid_token');
    const atMcp = await t.http
      .post('/mcp')
      .set(bearer(forRest))
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(atMcp.status).toBe(401);
    expect(atMcp.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('for the A2A resource, is taken at /a2a/… and nowhere else', async () => {
    const forA2a = await client.accessToken(org.email, {
      resource: `${PUBLIC_URL}/a2a`,
      scope: 'agents:read',
    });
    const agents = await t.http.get('/v1/agents').set(org.auth).expect(200);
    const echo = agents.body.data.find((agent: { name: string }) => agent.name === 'Echo') as { id: string };
    const card = await t.http
      .get(`/a2a/${echo.id}/.well-known/agent-card.json`)
      .set(bearer(forA2a))
      .set('A2A-Version', '1.0')
      .expect(200);
    expect(card.body.supportedInterfaces[0].url).toBe(`${PUBLIC_URL}/a2a/${echo.id}`);
    expectProblem(await t.http.get('/v1/agents').set(bearer(forA2a)), 401, 'invalid_token');
    const forRest = await client.accessToken(org.email, { scope: 'agents:read' });
    const atA2a = await t.http.get(`/a2a/${echo.id}/.well-known/agent-card.json`).set(bearer(forRest));
    expectProblem(atA2a, 401, 'invalid_token');
    expect(atA2a.headers['www-authenticate']).toContain(
      `resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource/a2a"`,
    );
  });

  it('never exceeds the user: a permission the user loses leaves the token at its next request', async () => {
    const member = await createUser(t.http, org, 'developer');
    const token = await client.accessToken(member.email, { scope: 'agents:read tasks:create' });
    await t.http
      .post('/v1/tasks')
      .set(bearer(token))
      .send({ instruction: 'x', agent_type: 'echo' })
      .expect(202);
    await t.http.patch(`/v1/users/${member.id}`).set(org.auth).send({ role: 'viewer' }).expect(200);
    expectProblem(
      await t.http.post('/v1/tasks').set(bearer(token)).send({ instruction: 'x', agent_type: 'echo' }),
      403,
      'forbidden',
    );
    await t.http.get('/v1/agents').set(bearer(token)).expect(200);
  });

  it("stops a deactivated user's tokens at once", async () => {
    const member = await createUser(t.http, org, 'developer');
    const token = await client.accessToken(member.email);
    await t.http.get('/v1/agents').set(bearer(token)).expect(200);
    await t.http.post(`/v1/users/${member.id}/deactivate`).set(org.auth).expect(200);
    expectProblem(await t.http.get('/v1/agents').set(bearer(token)), 401, 'user_deactivated');
  });

  it('rate-limits per grant (OAUTH_REQUESTS_PER_MINUTE), not per user', async () => {
    const member = await createUser(t.http, org, 'developer');
    const token = await client.accessToken(member.email);
    for (let i = 0; i < 5; i++) await t.http.get('/v1/agents').set(bearer(token)).expect(200);
    const limited = await t.http.get('/v1/agents').set(bearer(token));
    expectProblem(limited, 429, 'rate_limited');
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    // Another grant of the same user has windows of its own.
    await t.http
      .get('/v1/agents')
      .set(bearer(await client.accessToken(member.email)))
      .expect(200);
  });

  it('stops the tokens of a grant a replayed refresh token ended, also when they were just used', async () => {
    const { res } = await client.tokensFor(org.email);
    const { access_token: token, refresh_token: refreshToken } = res.body as Record<string, string>;
    await t.http.get('/v1/agents').set(bearer(token)).expect(200);
    expect((await client.refresh(refreshToken)).status).toBe(200);
    const replay = await client.refresh(refreshToken);
    expect(replay.body.error).toBe('invalid_grant');
    expectProblem(await t.http.get('/v1/agents').set(bearer(token)), 401, 'malformed_key');
  });

  it('lists and revokes grants over /v1/oauth/grants, audited and sent as events', async () => {
    const member = await createUser(t.http, org, 'developer');
    const grantsClient = await OAuthTestClient.register(t.http, 'Grants Assistant');
    const token = await grantsClient.accessToken(member.email);
    const own = await t.http.get('/v1/oauth/grants').set(member.auth).expect(200);
    expect(own.body.data).toEqual([
      {
        id: expect.stringMatching(/^grant_/),
        client: { client_id: grantsClient.clientId, client_name: 'Grants Assistant' },
        user_id: member.id,
        scopes: ['agents:read', 'tasks:read'],
        resource: `${PUBLIC_URL}/v1`,
        created_at: expect.any(String),
        // Not used yet: the first request with its token sets it.
        last_used_at: null,
      },
    ]);
    const grantId = own.body.data[0].id as string;
    // The administrator (api_keys:read) sees the organization's grants, this one among them.
    const all = await t.http.get('/v1/oauth/grants').set(org.auth).expect(200);
    expect(all.body.data.map((grant: { id: string }) => grant.id)).toContain(grantId);
    // Another member may neither see nor end it.
    const other = await createUser(t.http, org, 'developer');
    expect((await t.http.get('/v1/oauth/grants').set(other.auth).expect(200)).body.data).toEqual([]);
    expectProblem(await t.http.delete(`/v1/oauth/grants/${grantId}`).set(other.auth), 404, 'not_found');

    await t.http.get('/v1/agents').set(bearer(token)).expect(200);
    await t.http.delete(`/v1/oauth/grants/${grantId}`).set(member.auth).expect(204);
    expectProblem(await t.http.get('/v1/agents').set(bearer(token)), 401, 'malformed_key');

    const audit = async (action: string) =>
      (await t.http.get('/v1/audit-log').query({ action }).set(org.auth).expect(200)).body.data.filter(
        (entry: { details: Record<string, any> }) =>
          entry.details.grant_id === grantId || entry.details.client?.client_id === grantsClient.clientId,
      );
    expect(await audit('oauth.client_registered')).toHaveLength(1);
    const [created] = await audit('oauth.grant_created');
    expect(created.actor).toEqual({ type: 'user', id: member.id, client_id: grantsClient.clientId });
    const [revoked] = await audit('oauth.grant_revoked');
    expect(revoked.actor).toEqual({ type: 'user', id: member.id });
    expect(revoked.details).toMatchObject({ grant_id: grantId, scopes: ['agents:read', 'tasks:read'] });
  });

  it('reaches the MCP server with the SDK client, whose tools follow the granted scopes', async () => {
    const token = await client.accessToken(org.email, {
      resource: `${PUBLIC_URL}/mcp`,
      scope: 'agents:read tasks:read',
    });
    const server = t.app.getHttpServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const mcp = new Client({ name: 'oauth', version: '1.0.0' });
    try {
      await mcp.connect(
        new StreamableHTTPClientTransport(
          new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`),
          {
            requestInit: { headers: bearer(token) },
          },
        ),
      );
      const names = (await mcp.listTools()).tools.map((tool) => tool.name).sort();
      expect(names).toEqual(['get_task', 'list_agents', 'list_tasks']);
    } finally {
      await mcp.close();
    }
  });
});

describeWithPostgres('OAuth grants across instances')('OAuth grants across instances', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    const env = { ...sharedSecrets(), PUBLIC_URL };
    a = await startTestApp({ env });
    b = await startTestApp({ databaseUrl: a.databaseUrl, env });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('refuses a grant revoked on one instance on the other within a second', async () => {
    const org = await signUpOrganization(a.http, 'Two instances');
    const client = await OAuthTestClient.register(a.http);
    const token = await client.accessToken(org.email);
    await b.http.get('/v1/agents').set(bearer(token)).expect(200);
    const [grant] = await a.app.get(OAuthGrants).list(org.organizationId);
    expect(await a.app.get(OAuthGrants).revoke(org.organizationId, grant.id)).toBe(true);
    // The invalidation reaches the other instance over Redis: the contract's bound, not the next request.
    const refused = await expectWithinOneSecond(
      () => b.http.get('/v1/agents').set(bearer(token)),
      (res) => res.status === 401,
    );
    expectProblem(refused, 401, 'malformed_key');
  });
});
