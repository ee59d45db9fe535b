import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { DataSource } from 'typeorm';
import { OAuthGrants } from '../src/oauth/oauth-grants';
import { OAuthTokens } from '../src/oauth/oauth-tokens';
import { createKey } from './support/keys';
import { listenOnLoopback } from './support/loopback-server';
import { createUser, PASSWORD, SignedUpOrganization, signUpOrganization } from './support/factories';
import { authorize as authorizeAs, CookieJar, pkce, REDIRECT_URI } from './support/oauth-flow';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The OAuth 2.1 authorization server (issue 44): discovery, dynamic client registration and its limit,
 * the authorization code flow with PKCE driven by plain HTTP requests (sign-in and consent pages
 * submitted as a browser would, cookies carried by hand), tokens, refresh rotation and replay, code
 * replay, the refusals the contract names, introspection, and what is stored.
 */

const REGISTRATIONS_PER_HOUR = 8;

describe('OAuth 2.1 authorization server', () => {
  let app: TestApp;
  let org: SignedUpOrganization;
  let issuer: string;
  let clientId: string;
  let registered = 0;

  const register = (body: Record<string, unknown>) =>
    app.http.post('/oauth/register').send({
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...body,
    });

  /** The flow's browser side (support/oauth-flow.ts), as the organization's administrator unless told. */
  const authorize = (
    params: Record<string, string | undefined>,
    options: { email?: string; decision?: 'allow' | 'deny'; jar?: CookieJar } = {},
  ) => authorizeAs(app.http, params, { ...options, email: options.email ?? org.email });

  const codeRequest = (overrides: Record<string, string | undefined> = {}) => {
    const { verifier, challenge } = pkce();
    return {
      verifier,
      params: {
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
        response_type: 'code',
        scope: 'agents:read tasks:read',
        state: `state-${randomBytes(4).toString('hex')}`,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        ...overrides,
      },
    };
  };

  const exchange = (code: string, verifier: string, client = clientId) =>
    app.http.post('/oauth/token').type('form').send({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      client_id: client,
      code_verifier: verifier,
    });

  const refresh = (refreshToken: string) =>
    app.http
      .post('/oauth/token')
      .type('form')
      .send({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });

  /** A whole flow: authorization with consent, then the code exchanged. */
  async function tokensFor(overrides: Record<string, string | undefined> = {}, email?: string) {
    const { verifier, params } = codeRequest(overrides);
    const { redirect, consent } = await authorize(params, { email });
    const code = redirect.searchParams.get('code');
    if (!code) throw new Error(`no code: ${redirect}`);
    const res = await exchange(code, verifier, params.client_id);
    return { res, code, verifier, consent, redirect };
  }

  let keyWithVerify: { Authorization: string };
  let documents: Server;
  let documentsPort: number;

  beforeAll(async () => {
    app = await startTestApp({
      env: {
        OAUTH_REGISTRATIONS_PER_HOUR: String(REGISTRATIONS_PER_HOUR),
        // Client ID metadata documents served from this test, over http on loopback.
        ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      },
    });
    documents = createServer((req, res) => {
      const url = `http://127.0.0.1:${documentsPort}${req.url}`;
      const body =
        req.url === '/client.json'
          ? { client_id: url, client_name: 'Metadata Assistant', redirect_uris: [REDIRECT_URI] }
          : req.url === '/mismatch.json'
            ? { client_id: 'http://127.0.0.1:1/other.json', redirect_uris: [REDIRECT_URI] }
            : undefined;
      res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? {}));
    });
    documentsPort = await listenOnLoopback(documents);
    org = await signUpOrganization(app.http, 'OAuth Org');
    issuer = (await app.http.get('/.well-known/oauth-authorization-server').expect(200)).body.issuer;
    const res = await register({ redirect_uris: [REDIRECT_URI], client_name: 'Test Assistant' });
    if (res.status !== 201) throw new Error(`registration: ${res.status} ${res.text}`);
    registered++;
    clientId = res.body.client_id;
    keyWithVerify = (await createKey(app.http, org.auth, { name: 'verifier', role: 'api_manager' })).auth;
  });

  afterAll(async () => {
    documents?.close();
    await app?.close();
  });

  it('serves the authorization server metadata at both discovery paths', async () => {
    const oauth = await app.http.get('/.well-known/oauth-authorization-server').expect(200);
    const openid = await app.http.get('/.well-known/openid-configuration').expect(200);
    expect(openid.body).toEqual(oauth.body);
    expect(oauth.body).toEqual({
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      registration_endpoint: `${issuer}/oauth/register`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      introspection_endpoint: `${issuer}/oauth/introspect`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: expect.arrayContaining(['none']),
      scopes_supported: expect.arrayContaining(['agents:read', 'tasks:create', 'files:read']),
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    });
    expect(issuer).toMatch(/^http:\/\/localhost:\d+$/);
  });

  it('registers clients openly and refuses a redirect URI that is neither https nor loopback http', async () => {
    const https = await register({
      redirect_uris: ['https://assistant.example/cb'],
      client_name: 'Web',
    }).expect(201);
    registered++;
    expect(https.body).toMatchObject({
      client_id: expect.any(String),
      client_name: 'Web',
      token_endpoint_auth_method: 'none',
    });
    await register({ redirect_uris: ['http://[::1]:9000/cb', 'http://localhost:9001/cb'] }).expect(201);
    registered++;
    const bad = await register({ redirect_uris: ['http://assistant.example/cb'] }).expect(400);
    registered++;
    expect(bad.body.error).toBe('invalid_redirect_uri');
  });

  it('runs the code flow with PKCE S256: sign-in, consent, tokens with state and iss', async () => {
    const { verifier, params } = codeRequest({ resource: undefined });
    const jar = new CookieJar();
    const { redirect, consent } = await authorize(params, { jar });
    expect(redirect.searchParams.get('state')).toBe(params.state);
    expect(redirect.searchParams.get('iss')).toBe(issuer);
    expect(consent).toContain('Test Assistant');
    expect(consent).toContain('127.0.0.1:8765');
    expect(consent).toContain('OAuth Org');
    expect(consent).toContain('<code>agents:read</code>');
    expect(consent).toContain('<code>tasks:read</code>');
    expect(consent).toMatch(/>Allow</);
    expect(consent).toMatch(/>Deny</);

    const tokens = await exchange(redirect.searchParams.get('code')!, verifier).expect(200);
    expect(tokens.body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: expect.any(Number),
      refresh_token: expect.any(String),
      scope: 'agents:read tasks:read',
    });
    expect(tokens.body.expires_in).toBeLessThanOrEqual(3600);

    // The default resource is the REST API.
    const introspected = await app.http
      .post('/oauth/introspect')
      .set(keyWithVerify)
      .type('form')
      .send({ token: tokens.body.access_token })
      .expect(200);
    expect(introspected.body).toEqual({
      active: true,
      scope: 'agents:read tasks:read',
      client_id: clientId,
      sub: org.userId,
      aud: `${issuer}/v1`,
      exp: expect.any(Number),
    });
  });

  it('rotates refresh tokens; a replayed one is invalid_grant and ends the grant', async () => {
    const { res } = await tokensFor({ resource: `${issuer}/mcp` });
    expect(res.status).toBe(200);
    const first = res.body;
    const rotated = await refresh(first.refresh_token).expect(200);
    expect(rotated.body.refresh_token).not.toBe(first.refresh_token);
    expect(rotated.body.scope).toBe('agents:read tasks:read');

    const replay = await refresh(first.refresh_token).expect(400);
    expect(replay.body.error).toBe('invalid_grant');
    // The whole grant ended: the rotated refresh token and the access tokens are dead too.
    expect((await refresh(rotated.body.refresh_token).expect(400)).body.error).toBe('invalid_grant');
    for (const token of [first.access_token, rotated.body.access_token]) {
      const answer = await app.http.post('/oauth/introspect').set(keyWithVerify).send({ token }).expect(200);
      expect(answer.body).toEqual({ active: false });
    }
  });

  it('takes a code once: a second use is invalid_grant and revokes what the first issued', async () => {
    const { res, code, verifier } = await tokensFor();
    expect(res.status).toBe(200);
    const again = await exchange(code, verifier).expect(400);
    expect(again.body.error).toBe('invalid_grant');
    const answer = await app.http
      .post('/oauth/introspect')
      .set(keyWithVerify)
      .send({ token: res.body.access_token })
      .expect(200);
    expect(answer.body).toEqual({ active: false });
    expect((await refresh(res.body.refresh_token).expect(400)).body.error).toBe('invalid_grant');
  });

  it('refuses PKCE plain or missing with invalid_request, and an unknown resource with invalid_target', async () => {
    const plain = codeRequest({ code_challenge_method: 'plain' });
    const { redirect: plainRedirect } = await authorize(plain.params);
    expect(plainRedirect.searchParams.get('error')).toBe('invalid_request');
    expect(plainRedirect.searchParams.get('state')).toBe(plain.params.state);
    expect(plainRedirect.searchParams.get('iss')).toBe(issuer);

    const missing = codeRequest({ code_challenge: undefined, code_challenge_method: undefined });
    const { redirect: missingRedirect } = await authorize(missing.params);
    expect(missingRedirect.searchParams.get('error')).toBe('invalid_request');

    const elsewhere = codeRequest({ resource: 'https://elsewhere.example/api' });
    const { redirect: targetRedirect } = await authorize(elsewhere.params);
    expect(targetRedirect.searchParams.get('error')).toBe('invalid_target');
    expect(targetRedirect.searchParams.get('iss')).toBe(issuer);
  });

  it('shows errors on a page, never redirected, before the client and redirect URI are valid', async () => {
    const unknownClient = codeRequest({ client_id: 'no-such-client' });
    const res = await authorize(unknownClient.params);
    expect(res.first.status).toBe(400);
    expect(res.first.headers.location).toBeUndefined();

    const otherRedirect = codeRequest({ redirect_uri: 'http://127.0.0.1:8766/callback' });
    const other = await authorize(otherRedirect.params);
    expect(other.first.status).toBe(400);
    expect(other.first.headers.location).toBeUndefined();
  });

  it('takes a client ID metadata document for a client_id that is a URL, and refuses one naming another id', async () => {
    const documentUrl = `http://127.0.0.1:${documentsPort}/client.json`;
    const { res, consent } = await tokensFor({ client_id: documentUrl });
    expect(consent).toContain('Metadata Assistant');
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe('agents:read tasks:read');

    const mismatch = codeRequest({ client_id: `http://127.0.0.1:${documentsPort}/mismatch.json` });
    const refused = await authorize(mismatch.params);
    expect(refused.first.status).toBe(400);
    expect(refused.first.headers.location).toBeUndefined();
  });

  it('Deny redirects with access_denied, state and iss', async () => {
    const { params } = codeRequest();
    const { redirect } = await authorize(params, { decision: 'deny' });
    expect(redirect.searchParams.get('error')).toBe('access_denied');
    expect(redirect.searchParams.get('state')).toBe(params.state);
    expect(redirect.searchParams.get('iss')).toBe(issuer);
    expect(redirect.searchParams.get('code')).toBeNull();
  });

  it('shows asked permissions the user does not hold as not granted and leaves them out', async () => {
    const viewer = await createUser(app.http, org, 'viewer');
    const { res, consent } = await tokensFor({ scope: 'agents:read agents:create' }, viewer.email);
    expect(consent).toMatch(/class="denied"><code>agents:create<\/code> — not granted/);
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe('agents:read');
  });

  it('asks a browser whose signed-in user was deactivated since to sign in again', async () => {
    const developer = await createUser(app.http, org, 'developer');
    const jar = new CookieJar();
    const firstRun = codeRequest();
    const { redirect } = await authorize(firstRun.params, { email: developer.email, jar });
    const before = await exchange(redirect.searchParams.get('code')!, firstRun.verifier).expect(200);
    await app.http.post(`/v1/users/${developer.id}/deactivate`).set(org.auth).expect(200);
    // The deactivated user's refresh token is refused.
    expect((await refresh(before.body.refresh_token).expect(400)).body.error).toBe('invalid_grant');

    // The same browser (oidc-provider's session cookie) comes back: a sign-in page, not a consent.
    const secondRun = codeRequest({ scope: 'agents:read' });
    const again = await authorize(secondRun.params, { jar });
    expect(again.redirect.searchParams.get('code')).toBeTruthy();
    const tokens = await exchange(again.redirect.searchParams.get('code')!, secondRun.verifier).expect(200);
    const resolved = await app.app.get(OAuthTokens).resolve(tokens.body.access_token);
    // authorize() signs in as the organization's administrator when no email is given.
    expect(resolved?.userId).toBe(org.userId);
  });

  describe('signs in with the dashboard session', () => {
    const CSRF = { 'X-Gatehouse-CSRF': '1' };
    const signInToDashboard = async (email: string, jar: CookieJar) => {
      const res = await app.http.post('/v1/auth/session').send({ email, password: PASSWORD }).expect(200);
      jar.take(res);
      return res;
    };
    const userOf = async (redirect: URL, verifier: string) => {
      const tokens = await exchange(redirect.searchParams.get('code')!, verifier).expect(200);
      return (await app.app.get(OAuthTokens).resolve(tokens.body.access_token))?.userId;
    };

    it('sets the session cookie for /oauth too: SameSite=Lax, where an authorization request arrives from the client site', async () => {
      const res = await signInToDashboard(org.email, new CookieJar());
      const lines = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
      const [value] = /gatehouse_session=([^;]*)/.exec(lines[0])!.slice(1);
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(/; Path=\/v1\/auth\/session;.*SameSite=Strict/);
      expect(lines[1]).toContain(`gatehouse_session=${value};`);
      expect(lines[1]).toMatch(/; Path=\/oauth;/);
      expect(lines[1]).toMatch(/; HttpOnly;/);
      expect(lines[1]).toMatch(/; SameSite=Lax$/);
    });

    it('goes straight to consent, as its user, for a browser signed in to the dashboard', async () => {
      const developer = await createUser(app.http, org, 'developer');
      const jar = new CookieJar();
      await signInToDashboard(developer.email, jar);
      const run = codeRequest();
      // Were a sign-in page shown, authorize() would sign in as the administrator.
      const { redirect, signInPages, consent } = await authorize(run.params, { jar });
      expect(signInPages).toBe(0);
      expect(consent).toContain(developer.email);
      expect(await userOf(redirect, run.verifier)).toBe(developer.id);
    });

    it('a sign-in on the authorization page is a dashboard sign-in: the session renews the dashboard and is audited', async () => {
      const developer = await createUser(app.http, org, 'developer');
      const jar = new CookieJar();
      const run = codeRequest();
      const { redirect, signInPages } = await authorize(run.params, { jar, email: developer.email });
      expect(signInPages).toBe(1);
      expect(await userOf(redirect, run.verifier)).toBe(developer.id);
      const renewed = await app.http
        .post('/v1/auth/session/refresh')
        .set('Cookie', jar.header())
        .set(CSRF)
        .expect(200);
      expect(renewed.body.user.id).toBe(developer.id);
      const log = await app.http.get('/v1/audit-log?action=session.signed_in').set(org.auth).expect(200);
      expect(log.body.data.map((entry: { actor: { id: string } }) => entry.actor.id)).toContain(developer.id);
    });

    it('asks the same browser to sign in again once the dashboard session is signed out', async () => {
      const developer = await createUser(app.http, org, 'developer');
      const jar = new CookieJar();
      await signInToDashboard(developer.email, jar);
      expect((await authorize(codeRequest().params, { jar })).signInPages).toBe(0);
      // Signed out on the server; the browser still sends the (now revoked) cookie, and oidc-provider's
      // own session cookie names the developer still.
      await app.http.delete('/v1/auth/session').set('Cookie', jar.header()).set(CSRF).expect(204);
      const run = codeRequest();
      const again = await authorize(run.params, { jar, email: developer.email });
      expect(again.signInPages).toBe(1);
      expect(await userOf(again.redirect, run.verifier)).toBe(developer.id);
    });

    it('shows the sign-in page for prompt=login even to a browser signed in to the dashboard', async () => {
      const jar = new CookieJar();
      await signInToDashboard(org.email, jar);
      expect((await authorize(codeRequest({ prompt: 'login' }).params, { jar })).signInPages).toBe(1);
    });
  });

  it('introspects only for a credential holding api_keys:verify, and only its organization tokens', async () => {
    const { res } = await tokensFor();
    const token = res.body.access_token;
    const developer = await createKey(app.http, org.auth, { name: 'dev', role: 'developer' });
    await app.http.post('/oauth/introspect').set(developer.auth).send({ token }).expect(403);
    await app.http.post('/oauth/introspect').send({ token }).expect(401);

    const other = await signUpOrganization(app.http, 'Other');
    const otherKey = await createKey(app.http, other.auth, { name: 'verifier', role: 'api_manager' });
    expect(
      (await app.http.post('/oauth/introspect').set(otherKey.auth).send({ token }).expect(200)).body,
    ).toEqual({
      active: false,
    });
    expect(
      (await app.http.post('/oauth/introspect').set(keyWithVerify).send({ token: 'not-a-token' }).expect(200))
        .body,
    ).toEqual({ active: false });

    // RFC 7009 revocation by the public client: the token is refused from then on.
    await app.http.post('/oauth/revoke').type('form').send({ token, client_id: clientId }).expect(200);
    expect(
      (await app.http.post('/oauth/introspect').set(keyWithVerify).send({ token }).expect(200)).body,
    ).toEqual({
      active: false,
    });
  });

  it('stores no token, code or session in a form that could be presented', async () => {
    const { verifier, params } = codeRequest();
    const jar = new CookieJar();
    const { redirect } = await authorize(params, { jar });
    const code = redirect.searchParams.get('code')!;
    const res = await exchange(code, verifier).expect(200);
    const cookies = jar.values().filter((value) => value.length > 20);
    expect(cookies.length).toBeGreaterThan(0);
    const dataSource = app.app.get(DataSource);
    const rows: Record<string, unknown>[] = await dataSource.query('SELECT * FROM oauth_records');
    const grants: Record<string, unknown>[] = await dataSource.query('SELECT * FROM oauth_grants');
    expect(rows.length).toBeGreaterThan(0);
    expect(grants.length).toBeGreaterThan(0);
    const stored = JSON.stringify([rows, grants]);
    for (const value of [res.body.access_token, res.body.refresh_token, code, ...cookies]) {
      expect(value.length).toBeGreaterThan(20);
      expect(stored).not.toContain(value);
    }
  });

  it('lists the organization grants and revokes one with every token of it (OAuthGrants, OAuthTokens)', async () => {
    const { res } = await tokensFor({ resource: `${issuer}/mcp` });
    const tokens = app.app.get(OAuthTokens);
    const grants = app.app.get(OAuthGrants);
    const resolved = await tokens.resolve(res.body.access_token);
    expect(resolved).toEqual({
      grantId: expect.stringMatching(/^grant_/),
      clientId,
      clientName: 'Test Assistant',
      userId: org.userId,
      organizationId: org.organizationId,
      scopes: ['agents:read', 'tasks:read'],
      resource: `${issuer}/mcp`,
      expiresAt: expect.any(Date),
    });
    // Resolving is not using: the access layer records a use (at most once a minute per grant).
    expect((await grants.get(org.organizationId, resolved!.grantId))?.last_used_at).toBeNull();
    await tokens.used(resolved!.grantId);
    const listed = await grants.list(org.organizationId);
    expect(listed.find((grant) => grant.id === resolved!.grantId)).toEqual({
      id: resolved!.grantId,
      client: { client_id: clientId, client_name: 'Test Assistant' },
      user_id: org.userId,
      scopes: ['agents:read', 'tasks:read'],
      resource: `${issuer}/mcp`,
      created_at: expect.any(String),
      last_used_at: expect.any(String),
    });
    const other = await signUpOrganization(app.http, 'Elsewhere');
    expect(await grants.revoke(other.organizationId, resolved!.grantId)).toBe(false);
    expect(await grants.revoke(org.organizationId, resolved!.grantId)).toBe(true);
    expect(await tokens.resolve(res.body.access_token)).toBeNull();
    expect((await refresh(res.body.refresh_token).expect(400)).body.error).toBe('invalid_grant');
    expect((await grants.list(org.organizationId)).map((grant) => grant.id)).not.toContain(resolved!.grantId);
  });

  it('registers at most OAUTH_REGISTRATIONS_PER_HOUR clients per address an hour, then 429', async () => {
    for (; registered < REGISTRATIONS_PER_HOUR; registered++)
      await register({ redirect_uris: [REDIRECT_URI] }).expect(201);
    const refused = await register({ redirect_uris: [REDIRECT_URI] }).expect(429);
    expect(refused.headers['retry-after']).toBeDefined();
  });
});
