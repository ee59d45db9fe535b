import type { Request } from 'express';
import { unauthorized } from '../common/problem';

export interface PresentedCredential {
  value: string;
  /** How the caller sent it; later policies (hide_credentials, logging) depend on it. */
  via: 'bearer' | 'x-api-key' | 'query';
}

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

/**
 * Reads the credential in the documented order: `Authorization: Bearer`, `X-API-Key`, `?api_key`.
 * Two different credentials in one request are refused rather than guessed between.
 */
export function extractCredential(request: Request, allowQueryKey: boolean): PresentedCredential | undefined {
  let found: PresentedCredential | undefined;
  const add = (credential: PresentedCredential): void => {
    if (found && found.value !== credential.value) {
      throw unauthorized(
        'ambiguous_credentials',
        'The request carries more than one credential; send exactly one.',
      );
    }
    found ??= credential;
  };

  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = BEARER.exec(authorization);
    if (!match)
      throw unauthorized('malformed_credentials', 'The Authorization header must be "Bearer <credential>".');
    add({ value: match[1], via: 'bearer' });
  }

  const headerKey = request.headers['x-api-key'];
  if (headerKey !== undefined) {
    if (Array.isArray(headerKey) || !headerKey.trim()) {
      throw unauthorized('malformed_credentials', 'The X-API-Key header must hold exactly one key.');
    }
    add({ value: headerKey.trim(), via: 'x-api-key' });
  }

  // Express parses the query string anew on every `request.query` read: only read it when there is one.
  if (allowQueryKey && request.url.includes('?')) {
    const queryKey = request.query?.api_key;
    if (queryKey !== undefined) {
      if (typeof queryKey !== 'string' || !queryKey) {
        throw unauthorized('malformed_credentials', 'The api_key query parameter must hold exactly one key.');
      }
      add({ value: queryKey, via: 'query' });
    }
  }
  return found;
}
