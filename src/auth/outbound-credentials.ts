import type { Request } from 'express';
import { presentedValue } from '../access/credentials/presented-credential';

/**
 * The single decision about what an outbound call made on a caller's behalf (remote agents, webhooks)
 * may carry: the caller's key in `X-API-Key`, unless the key has `hide_credentials`, or the caller
 * did not use a key at all. Returns the headers to add. The value is read from the request where the
 * caller put it (the principal says which way), never kept beside it.
 */
export function outboundCredentialHeaders(request: Request): Record<string, string> {
  const key = request.principal?.key;
  if (!key || key.hideCredentials) return {};
  const value = presentedValue(request, key.presentedVia);
  return value ? { 'X-API-Key': value } : {};
}
