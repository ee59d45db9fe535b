import type { components } from '../../../clients/typescript/src/schema';

/**
 * The dashboard's sign-in session. The server keeps a refresh session in an httpOnly SameSite=Strict cookie
 * that page scripts never see; this module holds the short-lived access token in a module variable only
 * (never web storage, a readable cookie, the URL or a log), renews it before it runs out and once on a 401.
 *
 * These calls use plain fetch (they carry the cookie, not the token, and the client's middleware would
 * add the token); their types are the generated client's.
 */

// The session routes' shapes come from the generated client, like every other call's.
export type SessionUser = components['schemas']['SessionUserResponse'];
type SessionResponse = components['schemas']['DashboardSessionResponse'];

/** The fields of an application/problem+json answer the dashboard shows. */
export interface ProblemDetails {
  title: string;
  detail: string;
  status?: number;
  code?: string;
  request_id?: string;
  errors?: { field: string; message: string }[];
}

export class ApiError extends Error {
  constructor(readonly problem: ProblemDetails) {
    super(problem.detail);
  }
}

export type SignOutReason = 'signed_out' | 'idle' | 'expired';
type Listener = (user: SessionUser | null, reason?: SignOutReason) => void;

const SESSION_URL = '/v1/auth/session';
// Asks the server to accept the cookie: a cross-site form cannot add a custom header.
const CSRF_HEADERS = { 'X-Gatehouse-CSRF': '1' };

let accessToken: string | null = null;
let renewTimer: ReturnType<typeof setTimeout> | undefined;
let refreshing: Promise<SessionUser | null> | null = null;
// Bumped by sign-out, so that a refresh answered after it cannot sign the page back in.
let epoch = 0;
const listeners = new Set<Listener>();

export function onSessionChange(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function emit(user: SessionUser | null, reason?: SignOutReason): void {
  for (const listener of listeners) listener(user, reason);
}

/** A problem from any answer: the server's problem+json when there is one, else a plain description. */
export async function problemOf(response: Response): Promise<ProblemDetails> {
  const text = await response.text().catch(() => '');
  return toProblem(safeJson(text), response);
}

export function toProblem(body: unknown, response: Response): ProblemDetails {
  if (body && typeof body === 'object' && 'detail' in body && typeof body.detail === 'string') {
    return body as ProblemDetails;
  }
  return {
    title: response.statusText || 'Error',
    status: response.status,
    detail: `The server answered ${response.status} ${response.statusText}`.trim() + '.',
  };
}

export const NETWORK_PROBLEM: ProblemDetails = {
  title: 'Network error',
  detail: 'The server could not be reached. Check your connection and try again.',
};

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function startSession(session: SessionResponse): SessionUser {
  accessToken = session.access_token;
  clearTimeout(renewTimer);
  // Renew a minute before the token runs out (or at 80% of a very short lifetime).
  const lifetime = session.expires_in;
  const renewIn = lifetime > 120 ? lifetime - 60 : lifetime * 0.8;
  renewTimer = setTimeout(() => void refreshSession(), renewIn * 1000);
  emit(session.user);
  return session.user;
}

function endSession(reason: SignOutReason): void {
  accessToken = null;
  clearTimeout(renewTimer);
  emit(null, reason);
}

async function send(path: '' | '/refresh', init: RequestInit): Promise<Response> {
  try {
    // same-origin: the session cookie goes along (it is SameSite=Strict and scoped to these routes).
    return await fetch(SESSION_URL + path, { ...init, credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(NETWORK_PROBLEM);
  }
}

/** Signs in; a wrong email or password throws the server's problem (401). */
export async function signIn(email: string, password: string): Promise<SessionUser> {
  const response = await send('', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  if (!response.ok) throw new ApiError(await problemOf(response));
  return startSession((await response.json()) as SessionResponse);
}

/**
 * A fresh access token from the cookie session; null when there is none (204: no cookie; 401: ended). Concurrent callers (say,
 * several calls that all met a 401) share one request.
 */
export function refreshSession(): Promise<SessionUser | null> {
  refreshing ??= (async () => {
    const signedIn = accessToken !== null;
    const mine = epoch;
    let response: Response | undefined;
    try {
      response = await send('/refresh', { method: 'POST', headers: CSRF_HEADERS });
      if (mine !== epoch) return null;
      // 204: no session cookie, nobody signed in on this browser.
      if (response.status === 204) {
        if (signedIn) endSession('expired');
        return null;
      }
      if (response.ok) return startSession((await response.json()) as SessionResponse);
    } catch (error) {
      if (!signedIn) throw error;
    } finally {
      refreshing = null;
    }
    if (!signedIn) return null;
    if (response?.status === 401) {
      endSession('expired');
    } else {
      // Offline or a passing server error: keep the current token and try again shortly.
      clearTimeout(renewTimer);
      renewTimer = setTimeout(() => void refreshSession(), 30_000);
    }
    return null;
  })();
  return refreshing;
}

/** Ends the session here and on the server (the cookie's session is revoked), then shows the sign-in form. */
export async function signOut(reason: SignOutReason = 'signed_out'): Promise<void> {
  epoch++;
  accessToken = null;
  clearTimeout(renewTimer);
  try {
    await send('', { method: 'DELETE', headers: CSRF_HEADERS });
  } catch {
    // Nothing more to do offline: the token is gone from this page and the cookie session expires on its own.
  } finally {
    emit(null, reason);
  }
}

/**
 * The fetch the generated client uses: adds the access token and, on a 401, renews the token once and
 * repeats the request before giving up.
 */
export async function authorizedFetch(request: Request): Promise<Response> {
  const retry = request.clone();
  const response = await fetch(withToken(request));
  if (response.status !== 401 || accessToken === null) return response;
  const user = await refreshSession().catch(() => null);
  return user ? fetch(withToken(retry)) : response;
}

function withToken(request: Request): Request {
  if (accessToken !== null) request.headers.set('Authorization', `Bearer ${accessToken}`);
  return request;
}
