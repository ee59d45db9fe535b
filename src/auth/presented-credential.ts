import type { Request } from 'express';
import { unauthorized } from '../common/problem';

export interface PresentedCredential {
  value: string;
  /** How the caller sent it; later policies (hide_credentials, logging) depend on it. */
  via: 'bearer' | 'x-api-key' | 'query';
}

/**
 * Reads the credential in the documented order: `Authorization: Bearer`, `X-API-Key`, `?api_key`.
 * Two different credentials in one request are refused rather than guessed between.
 */
export function extractCredential(request: Request, allowQueryKey: boolean): PresentedCredential | undefined {
  const found: PresentedCredential[] = [];

  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
    if (!match)
      throw unauthorized('malformed_credentials', 'The Authorization header must be "Bearer <credential>".');
    found.push({ value: match[1], via: 'bearer' });
  }

  const headerKey = request.headers['x-api-key'];
  if (headerKey !== undefined) {
    if (Array.isArray(headerKey) || !headerKey.trim()) {
      throw unauthorized('malformed_credentials', 'The X-API-Key header must hold exactly one key.');
    }
    found.push({ value: headerKey.trim(), via: 'x-api-key' });
  }

  const queryKey = request.query?.api_key;
  if (queryKey !== undefined && allowQueryKey) {
    if (typeof queryKey !== 'string' || !queryKey) {
      throw unauthorized('malformed_credentials', 'The api_key query parameter must hold exactly one key.');
    }
    found.push({ value: queryKey, via: 'query' });
  }

  const distinct = new Set(found.map((c) => c.value));
  if (distinct.size > 1) {
    throw unauthorized(
      'ambiguous_credentials',
      'The request carries more than one credential; send exactly one.',
    );
  }
  return found[0];
}
