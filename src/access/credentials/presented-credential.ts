import type { Request } from 'express';
import { API_KEY_QUERY_PARAMETER } from '../../common/validation';
import { AccessDenial, AccessDenialCode } from '../access-denial';

export interface PresentedCredential {
  value: string;
  /** How the caller sent it; later policies (hide_credentials, logging) depend on it. */
  via: 'bearer' | 'x-api-key' | 'query';
}

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

const malformed = (detail: string): AccessDenial =>
  new AccessDenial(AccessDenialCode.MalformedCredentials, detail);

/**
 * Reads the credential in the documented order: `Authorization: Bearer`, `X-API-Key`, `?api_key`.
 * Two different credentials in one request are refused rather than guessed between. Answers
 * undefined when there is none.
 */
export function extractCredential(
  request: Request,
  allowQueryKey: boolean,
): PresentedCredential | AccessDenial | undefined {
  // The first credential found, in the documented order; another with a different value makes the
  // request ambiguous, said once every credential was read (a malformed one is said first).
  let found: PresentedCredential | undefined;
  let ambiguous = false;

  const headers = request.headers;
  const authorization = headers.authorization;
  if (authorization !== undefined) {
    const match = BEARER.exec(authorization);
    if (!match) return malformed('The Authorization header must be "Bearer <credential>".');
    found = { value: match[1], via: 'bearer' };
  }

  const headerKey = headers['x-api-key'];
  if (headerKey !== undefined) {
    if (Array.isArray(headerKey) || !headerKey.trim()) {
      return malformed('The X-API-Key header must hold exactly one key.');
    }
    const value = headerKey.trim();
    if (found) ambiguous = found.value !== value;
    else found = { value, via: 'x-api-key' };
  }

  // Express parses the query string anew on every `request.query` read: only read it when there is one.
  if (allowQueryKey && request.url.includes('?')) {
    const queryKey = request.query?.[API_KEY_QUERY_PARAMETER];
    if (queryKey !== undefined) {
      if (typeof queryKey !== 'string' || !queryKey) {
        return malformed('The api_key query parameter must hold exactly one key.');
      }
      if (found) ambiguous ||= found.value !== queryKey;
      else found = { value: queryKey, via: 'query' };
    }
  }
  if (ambiguous) {
    return new AccessDenial(
      AccessDenialCode.AmbiguousCredentials,
      'The request carries more than one credential; send exactly one.',
    );
  }
  return found;
}

/**
 * The value of the credential an accepted request presented through `via` (its principal's
 * `key.presentedVia`), read again from the request: only outbound calls on the caller's behalf need it,
 * so the key check does not keep it per request. The query is read only when the key came that way
 * (the query parameter was allowed then); undefined when the request holds no such credential.
 */
export function presentedValue(request: Request, via: PresentedCredential['via']): string | undefined {
  const presented = extractCredential(request, via === 'query');
  return presented instanceof AccessDenial ? undefined : presented?.value;
}
