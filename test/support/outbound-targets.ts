/**
 * URLs for what outbound calls (http agents, webhooks) may reach. A public one that needs no DNS and
 * reaches nobody: the IPv6 documentation range (RFC 9637), which the address policy counts as public.
 */
export const PUBLIC_URL = 'http://[3fff::10]/hook';

/** Targets the default policy refuses (ALLOW_PRIVATE_NETWORK_TARGETS unset): [label, url]. */
export const PRIVATE_TARGETS: readonly (readonly [string, string])[] = [
  ['127.0.0.1', 'http://127.0.0.1:8080/'],
  ['localhost', 'http://localhost:8080/'],
  ['[::1]', 'http://[::1]:8080/'],
  ['a private address', 'http://10.1.2.3/run'],
  ['the link-local metadata address', 'http://169.254.169.254/latest/meta-data/'],
  ['an IPv4-mapped loopback address', 'http://[::ffff:127.0.0.1]:8080/'],
];

/**
 * An instance whose workers pick work up within 50 ms and may call the tests' own agents and webhook
 * receivers on 127.0.0.1, which the default policy refuses. Workers are turned on beside it.
 */
export const CALLS_LOCAL_TARGETS = { WORKER_POLL_MS: '50', ALLOW_PRIVATE_NETWORK_TARGETS: 'true' } as const;
