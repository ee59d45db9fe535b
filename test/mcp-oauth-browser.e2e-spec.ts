import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM, describeInBrowser, UI_TIMEOUT_MS } from './support/dashboard-browser';
import { PASSWORD, signUpOrganization, type SignedUpOrganization } from './support/factories';
import { freeLoopbackPort } from './support/ports';
import { startTestApp, type TestApp } from './support/test-app';

/**
 * An AI assistant signing in to the MCP server through Gatehouse's authorization server, as the MCP SDK's
 * own OAuth client does it (CONTRACT, "AI assistants"): the 401's resource metadata, discovery, dynamic
 * client registration, the authorization request with PKCE and the resource, the sign-in and consent
 * pages in a real browser (Chromium), the code at the client's loopback redirect, the token exchange,
 * then tools listed with the token.
 */

/** What an assistant keeps between runs, in memory; the browser is the user's. */
class AssistantAuth implements OAuthClientProvider {
  information?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier?: string;
  authorizationUrl?: URL;

  constructor(readonly redirectUrl: string) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Browser Assistant',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error('no code verifier saved');
    return this.verifier;
  }
}

/** The client's loopback redirect: resolves with the query the authorization server sent back. */
async function loopbackRedirect(): Promise<{
  url: string;
  received: Promise<URLSearchParams>;
  close(): void;
}> {
  let deliver!: (query: URLSearchParams) => void;
  const received = new Promise<URLSearchParams>((resolve) => (deliver = resolve));
  const server: Server = createServer((request, response) => {
    deliver(new URL(request.url ?? '/', 'http://127.0.0.1').searchParams);
    response.end('You can close this window.');
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    received,
    close: () => server.close(),
  };
}

describeInBrowser('MCP with OAuth in a browser')('MCP with OAuth in a browser', () => {
  let t: TestApp;
  let base: string;
  let org: SignedUpOrganization;
  let browser: Browser;

  beforeAll(async () => {
    const port = await freeLoopbackPort();
    base = `http://127.0.0.1:${port}`;
    t = await startTestApp({ env: { PUBLIC_URL: base, WORKER_CONCURRENCY: '1', WORKER_POLL_MS: '50' } });
    const server = t.app.getHttpServer();
    await new Promise<void>((done) => server.listen(port, '127.0.0.1', done));
    org = await signUpOrganization(t.http, 'Browser OAuth');
    browser = await chromium.launch({ executablePath: CHROMIUM });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it("signs in with the SDK's OAuthClientProvider, consents in Chromium, and lists the granted tools", async () => {
    const redirect = await loopbackRedirect();
    const auth = new AssistantAuth(redirect.url);
    const mcpUrl = new URL(`${base}/mcp`);
    try {
      // No token yet: the SDK reads the 401's resource metadata, registers, and asks for authorization.
      const first = new Client({ name: 'assistant', version: '1.0.0' });
      await expect(
        first.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth })),
      ).rejects.toThrow(UnauthorizedError);
      const authorizationUrl = auth.authorizationUrl!;
      expect(authorizationUrl.origin).toBe(base);
      expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
      expect(authorizationUrl.searchParams.get('resource')).toBe(`${base}/mcp`);

      const page = await browser.newPage();
      page.setDefaultTimeout(UI_TIMEOUT_MS);
      await page.goto(authorizationUrl.href);
      await page.getByLabel('Email').fill(org.email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      // The consent page names the client, the organization and each permission asked.
      await page.getByText('Browser Assistant').first().waitFor();
      await page.getByText('agents:read').first().waitFor();
      const [query] = await Promise.all([
        redirect.received,
        page.getByRole('button', { name: 'Allow' }).click(),
      ]);
      await page.close();
      expect(query.get('iss')).toBe(base);
      const code = query.get('code');
      expect(code).toEqual(expect.any(String));

      const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth });
      await transport.finishAuth(code!);
      expect(auth.saved?.access_token).toEqual(expect.any(String));
      const client = new Client({ name: 'assistant', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth }));
      try {
        const names = (await client.listTools()).tools.map((tool) => tool.name);
        // OAUTH_DEFAULT_SCOPES: agents:read tasks:create tasks:read files:read files:create.
        expect(names).toEqual(expect.arrayContaining(['list_agents', 'run_echo', 'get_task', 'upload_file']));
        expect(names).not.toContain('cancel_task');
        const run = await client.callTool({ name: 'run_echo', arguments: { instruction: 'signed in' } });
        expect(run.structuredContent).toMatchObject({ instruction: 'signed in', status: 'succeeded' });
      } finally {
        await client.close();
      }
      const grants = await t.http.get('/v1/oauth/grants').set(org.auth).expect(200);
      expect(grants.body.data).toEqual([
        expect.objectContaining({
          client: expect.objectContaining({ client_name: 'Browser Assistant' }),
          resource: `${base}/mcp`,
        }),
      ]);
    } finally {
      redirect.close();
    }
  });
});
