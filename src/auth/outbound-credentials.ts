import type { IncomingMessage } from 'node:http';

// A symbol-keyed, non-enumerable slot: serializers, loggers and JSON.stringify never see it.
const PRESENTED_KEY = Symbol('gatehouse.presentedKey');

type WithPresentedKey = IncomingMessage & { [PRESENTED_KEY]?: string };

/** Called by ApiKeyGuard once a key is accepted. */
export function rememberPresentedKey(request: IncomingMessage, value: string): void {
  Object.defineProperty(request, PRESENTED_KEY, {
    value,
    enumerable: false,
    configurable: false,
    writable: false,
  });
}

/**
 * The single decision about what an outbound call made on a caller's behalf (remote agents, webhooks)
 * may carry: the caller's key in `X-API-Key`, unless the key has `hide_credentials`, or the caller
 * did not use a key at all. Returns the headers to add.
 */
export function outboundCredentialHeaders(request: IncomingMessage): Record<string, string> {
  const key = request.principal?.key;
  const value = (request as WithPresentedKey)[PRESENTED_KEY];
  if (!key || key.hideCredentials || !value) return {};
  return { 'X-API-Key': value };
}
