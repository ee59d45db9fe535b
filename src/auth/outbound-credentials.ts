import type { IncomingMessage } from 'node:http';

// Kept beside the request, not on it: serializers, loggers and JSON.stringify never see it, and it goes
// away with the request.
const presentedKeys = new WeakMap<IncomingMessage, string>();

/** Called by ApiKeyGuard once a key is accepted. */
export function rememberPresentedKey(request: IncomingMessage, value: string): void {
  presentedKeys.set(request, value);
}

/**
 * The single decision about what an outbound call made on a caller's behalf (remote agents, webhooks)
 * may carry: the caller's key in `X-API-Key`, unless the key has `hide_credentials`, or the caller
 * did not use a key at all. Returns the headers to add.
 */
export function outboundCredentialHeaders(request: IncomingMessage): Record<string, string> {
  const key = request.principal?.key;
  const value = presentedKeys.get(request);
  if (!key || key.hideCredentials || !value) return {};
  return { 'X-API-Key': value };
}
