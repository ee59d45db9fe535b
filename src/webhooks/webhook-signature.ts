import { randomBytes } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';

/** `whsec_` + base64 of 32 random bytes, as the Standard Webhooks convention writes secrets. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The `webhook-signature` header of a delivery, by the official Standard Webhooks library. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  return new StandardWebhook(secret).sign(id, new Date(timestamp * 1000), body);
}
