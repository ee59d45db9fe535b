import { createHash, randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { PASSWORD } from './factories';

/**
 * The OAuth 2.1 authorization code flow against a test app, driven by plain HTTP as a browser and a
 * public client would drive it: registration, the authorization request followed through the sign-in and
 * consent pages (forms submitted with their CSRF field, cookies carried by hand), and the code exchanged
 * with its PKCE verifier.
 */

export const REDIRECT_URI = 'http://127.0.0.1:8765/callback';

const base64url = (bytes: Buffer): string => bytes.toString('base64url');

export function pkce(): { verifier: string; challenge: string } {
  const verifier = base64url(randomBytes(32));
  return { verifier, challenge: base64url(createHash('sha256').update(verifier).digest()) };
}

/** A browser's cookies for the app: what each Set-Cookie said, sent back on the next request. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  take(res: Response): void {
    for (const line of ([] as string[]).concat(res.headers['set-cookie'] ?? [])) {
      const [pair] = line.split(';');
      const separator = pair.indexOf('=');
      const name = pair.slice(0, separator).trim();
      const value = pair.slice(separator + 1).trim();
      if (!value || /max-age=0/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line))
        this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  values(): string[] {
    return [...this.cookies.values()];
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

/** The path and query of a Location (the provider names its own host: the request's). */
export const pathOf = (location: string): string => {
  const url = new URL(location, 'http://app.test');
  return `${url.pathname}${url.search}`;
};

export const hiddenValue = (html: string, name: string): string => {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!match) throw new Error(`no ${name} in the page: ${html.slice(0, 500)}`);
  return match[1];
};

export const formAction = (html: string): string => {
  const match = /<form method="post" action="([^"]+)"/.exec(html);
  if (!match) throw new Error(`no form in the page: ${html.slice(0, 500)}`);
  return match[1];
};

export interface AuthorizeOptions {
  email: string;
  decision?: 'allow' | 'deny';
  jar?: CookieJar;
}

/**
 * Follows an authorization request as a browser would until it leaves for the client: signs in when the
 * sign-in page shows, then answers the consent page. Answers the final redirect, the consent page's HTML,
 * the first response (an error page, when the request never reached the client) and how many sign-in
 * pages it answered (none for a browser signed in to the dashboard).
 */
export async function authorize(
  http: TestAgent,
  params: Record<string, string | undefined>,
  options: AuthorizeOptions,
): Promise<{ redirect: URL; consent?: string; first: Response; signInPages: number }> {
  const jar = options.jar ?? new CookieJar();
  const query = new URLSearchParams(
    Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  let res = await http.get(`/oauth/authorize?${query}`).set('Cookie', jar.header());
  const first = res;
  let consent: string | undefined;
  let signInPages = 0;
  const redirectUri = params.redirect_uri ?? REDIRECT_URI;
  for (let step = 0; step < 12; step++) {
    jar.take(res);
    if (res.status === 302 || res.status === 303) {
      const location = res.headers.location as string;
      if (location.startsWith(redirectUri))
        return { redirect: new URL(location), consent, first, signInPages };
      res = await http.get(pathOf(location)).set('Cookie', jar.header());
      continue;
    }
    if (res.status !== 200) return { redirect: new URL('about:blank'), consent, first: res, signInPages };
    const html = res.text;
    if (!html.includes('name="csrf"')) {
      // oidc-provider's own self-submitting form (switching the signed-in account ends its session
      // first): submitted as the browser's script would.
      const fields = Object.fromEntries(
        [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1], m[2]]),
      );
      res = await http
        .post(pathOf(formAction(html)))
        .type('form')
        .set('Cookie', jar.header())
        .send(fields);
      continue;
    }
    const csrf = hiddenValue(html, 'csrf');
    if (html.includes('name="password"')) {
      signInPages++;
      res = await http
        .post(formAction(html))
        .type('form')
        .set('Cookie', jar.header())
        .send({ csrf, email: options.email, password: PASSWORD });
    } else {
      consent = html;
      res = await http
        .post(formAction(html))
        .type('form')
        .set('Cookie', jar.header())
        .send({ csrf, decision: options.decision ?? 'allow' });
    }
  }
  throw new Error('the authorization did not end');
}

/** A public client registered by DCR, and the flows it runs as one user. */
export class OAuthTestClient {
  private constructor(
    private readonly http: TestAgent,
    readonly clientId: string,
  ) {}

  static async register(http: TestAgent, clientName = 'Test Assistant'): Promise<OAuthTestClient> {
    const res = await http.post('/oauth/register').send({
      redirect_uris: [REDIRECT_URI],
      client_name: clientName,
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
    if (res.status !== 201) throw new Error(`registration: ${res.status} ${res.text}`);
    return new OAuthTestClient(http, res.body.client_id as string);
  }

  /** The authorization request's parameters with a fresh PKCE pair and state. */
  codeRequest(overrides: Record<string, string | undefined> = {}) {
    const { verifier, challenge } = pkce();
    return {
      verifier,
      params: {
        client_id: this.clientId,
        redirect_uri: REDIRECT_URI,
        response_type: 'code',
        scope: 'agents:read tasks:read',
        state: `state-${randomBytes(4).toString('hex')}`,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        ...overrides,
      },
    };
  }

  exchange(code: string, verifier: string) {
    return this.http.post('/oauth/token').type('form').send({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      client_id: this.clientId,
      code_verifier: verifier,
    });
  }

  refresh(refreshToken: string) {
    return this.http
      .post('/oauth/token')
      .type('form')
      .send({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: this.clientId });
  }

  /** A whole flow as `email`: authorization with consent, then the code exchanged. */
  async tokensFor(email: string, overrides: Record<string, string | undefined> = {}) {
    const { verifier, params } = this.codeRequest(overrides);
    const { redirect, consent } = await authorize(this.http, params, { email });
    const code = redirect.searchParams.get('code');
    if (!code) throw new Error(`no code: ${redirect}`);
    const res = await this.exchange(code, verifier);
    return { res, code, verifier, consent, redirect };
  }

  /** The access token of a whole flow as `email` (the exchange must succeed). */
  async accessToken(email: string, overrides: Record<string, string | undefined> = {}): Promise<string> {
    const { res } = await this.tokensFor(email, overrides);
    if (res.status !== 200) throw new Error(`token exchange: ${res.status} ${res.text}`);
    return res.body.access_token as string;
  }
}
