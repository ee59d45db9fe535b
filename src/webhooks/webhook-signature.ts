import { createHmac, randomBytes } from 'node:crypto';

/** `whsec_` + base64 of 32 random bytes, as the Standard Webhooks convention writes secrets. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 over `${id}.${timestamp}.${body}`, keyed by
 * the base64-decoded part of the secret.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}
