import type { CookieOptions, Request, Response } from 'express';
import type { IncomingMessage } from 'node:http';

export const SESSION_COOKIE = 'gatehouse_session';
/** The browser sends the cookie to the session endpoints only: no other API request carries it or logs it. */
export const SESSION_COOKIE_PATH = '/v1/auth/session';
/**
 * The same value, also sent to the OAuth authorization server's pages (OAuthAccounts reads it there), so
 * that signing in to the dashboard signs in to the authorization endpoint and signing out signs out of
 * both: one session, two paths. Its own attributes below.
 */
export const OAUTH_SESSION_COOKIE_PATH = '/oauth';
/** The cookie's security scheme in the OpenAPI document (see createOpenApiDocument). */
export const SESSION_COOKIE_SCHEME = 'dashboard_session';

/**
 * The session cookie's value from the Cookie header, parsed by hand rather than by a global
 * cookie-parser: this is the one place the API reads a cookie. The value is base64url, so nothing needs
 * decoding; an empty one counts as none.
 */
export function readSessionCookie(request: Pick<IncomingMessage, 'headers'>): string | undefined {
  for (const pair of (request.headers.cookie ?? '').split(';')) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === SESSION_COOKIE) {
      return pair.slice(separator + 1).trim() || undefined;
    }
  }
  return undefined;
}

/**
 * httpOnly: no page script can read it (an XSS cannot take the session away). SameSite=Strict: no
 * other site's page makes the browser send it. Secure whenever the request came over https (Express's
 * `req.secure`, which follows TRUST_PROXY).
 */
function attributes(request: Request): CookieOptions {
  return { httpOnly: true, sameSite: 'strict', path: SESSION_COOKIE_PATH, secure: request.secure };
}

/**
 * The copy under /oauth is SameSite=Lax: an authorization request arrives by a top-level navigation from
 * the client's site, which a Strict cookie never rides. Lax still keeps it off every cross-site
 * sub-request and POST, and the pages' forms carry a value bound to the interaction besides.
 */
function oauthAttributes(request: Request): CookieOptions {
  return { ...attributes(request), sameSite: 'lax', path: OAUTH_SESSION_COOKIE_PATH };
}

export function setSessionCookie(
  request: Request,
  response: Response,
  { refreshToken, maxAgeSeconds }: { refreshToken: string; maxAgeSeconds: number },
): void {
  const maxAge = maxAgeSeconds * 1000;
  response.cookie(SESSION_COOKIE, refreshToken, { ...attributes(request), maxAge });
  response.cookie(SESSION_COOKIE, refreshToken, { ...oauthAttributes(request), maxAge });
}

/** `Max-Age=0` with the same attributes, so the browser drops exactly those cookies. */
export function clearSessionCookie(request: Request, response: Response): void {
  response.cookie(SESSION_COOKIE, '', { ...attributes(request), maxAge: 0 });
  response.cookie(SESSION_COOKIE, '', { ...oauthAttributes(request), maxAge: 0 });
}
