/**
 * What each event's `data` carries: the types the producers build their events with, and the schemas
 * of the OpenAPI document's `webhooks` section (the @nestjs/swagger plugin reads these classes'
 * TypeScript types), so the description cannot drift from what is sent. TypeScript has no integer
 * type: the plugin documents a `number` as one, so counts say `integer` themselves.
 */
import { ApiProperty } from '@nestjs/swagger';

/** A count the plugin would document as `number`: documented as `integer`, its description kept. */
const Integer = (): PropertyDecorator => ApiProperty({ type: 'integer' });

export class EventActor {
  /** Who acted: a user, an API key, or the service itself (scheduled expiry and rotation). */
  type: 'user' | 'api_key' | 'system';
  /** The user's or key's id; null for the service. */
  id: string | null;
}

/** Every key event: which key, and who acted. */
export class KeyEventData {
  key_id: string;
  name: string;
  type: 'personal' | 'team' | 'service';
  role: string;
  actor: EventActor;
}

export class KeyCreatedData extends KeyEventData {}

export class KeyRotatedData extends KeyEventData {
  /** True for a rotation by the key's rotation policy. */
  automatic: boolean;
  @Integer() grace_period_seconds: number;
  /** When the previous value stops working; null without a grace period. */
  previous_key_expires_at: string | null;
  /** The new key value: only on an automatic rotation (a manual one returns it to its caller). */
  key?: string;
}

export class KeyDeletedData extends KeyEventData {}

export class KeyRevokedData extends KeyEventData {
  /** `owner_deactivated`: its owner was deactivated; `leaked`: it was reported leaked (see `key.leaked`). */
  reason: 'owner_deactivated' | 'leaked';
  /** The deactivated owner of the personal key (reason `owner_deactivated` only). */
  owner_id?: string;
}

/**
 * `key.leaked`: the key's value was reported found in public, once per key and source URL, whether or
 * not the key was still active.
 */
export class KeyLeakedData extends KeyEventData {
  /** `github`: GitHub secret scanning; `public_report`: POST /v1/credentials/revoke. */
  source: 'github' | 'public_report';
  /** Where the value was found (GitHub's report names it); null when the report named none. */
  url: string | null;
  /**
   * What the report did: the organization's leak_response for an active key (`revoked`, `disabled`, or
   * `none` under `notify`), `none` for a key that was no longer active.
   */
  action_taken: 'revoked' | 'disabled' | 'none';
}

/** `key.expiring` (EXPIRY_WARNING_DAYS ahead) and `key.expired`. */
export class KeyExpiryData extends KeyEventData {
  expiration: string;
}

/** `key.disabled` and `key.enabled`: the kill switch was turned (PATCH `enabled`). */
export class KeySwitchedData extends KeyEventData {
  /** The key's `enabled` after the change. */
  enabled: boolean;
}

/** `key.credits_low`: the balance fell below 10% of the amount last set or refilled (sent once per amount). */
export class KeyCreditsLowData extends KeyEventData {
  /** Credits left when the mark was crossed. */
  @Integer() remaining: number;
  /** The amount last set or refilled. */
  @Integer() amount: number;
}

/** `key.updated` (audit log and outbox only: not a webhook event). */
export class KeyUpdatedData extends KeyEventData {
  /** The fields the update changed. */
  fields: string[];
  /** Each changed setting before and after, as the key object shows it (not `credits`); absent when none. */
  changes?: Record<string, { from: unknown; to: unknown }>;
}

/** Every identity event: which identity (its id and your external_id), and who acted. */
export class IdentityEventData {
  identity_id: string;
  external_id: string;
  actor: EventActor;
}

export class IdentityCreatedData extends IdentityEventData {}

export class IdentityUpdatedData extends IdentityEventData {
  /** The fields the update changed. */
  fields: string[];
}

/** `external_id` is the one the identity had when it was deleted. */
export class IdentityDeletedData extends IdentityEventData {}

/**
 * `identity.credits_low`: the shared balance fell below 10% of the amount last set or refilled (sent
 * once per amount; the actor is the service).
 */
export class IdentityCreditsLowData extends IdentityEventData {
  /** Credits left when the mark was crossed. */
  @Integer() remaining: number;
  /** The amount last set or refilled. */
  @Integer() amount: number;
}

export class TaskEventData {
  task_id: string;
  agent_type: string;
}

export class TaskError {
  code: string;
  message: string;
}

/** What a run used and cost, as the task object's `usage` shows it when it ended. */
export class TaskUsage {
  @Integer() input_tokens: number;
  @Integer() output_tokens: number;
  @Integer() credits: number;
}

export class TaskEndedData extends TaskEventData {
  usage: TaskUsage;
}

export class TaskFailedData extends TaskEndedData {
  error: TaskError;
}

/** What a key event adds to KeyEventData, by event type: what KeyChangeRecorder's callers pass. */
export interface KeyEventDetails {
  'key.created': Pick<KeyCreatedData, 'name' | 'role' | 'type'>;
  'key.updated': Omit<KeyUpdatedData, keyof KeyEventData>;
  'key.rotated': Omit<KeyRotatedData, keyof KeyEventData | 'key'>;
  'key.deleted': Pick<KeyDeletedData, 'name'>;
  'key.revoked': Omit<KeyRevokedData, keyof KeyEventData>;
  'key.expiring': Omit<KeyExpiryData, keyof KeyEventData>;
  'key.expired': Omit<KeyExpiryData, keyof KeyEventData>;
  'key.disabled': Omit<KeySwitchedData, keyof KeyEventData>;
  'key.enabled': Omit<KeySwitchedData, keyof KeyEventData>;
  'key.credits_low': Omit<KeyCreditsLowData, keyof KeyEventData>;
  'key.leaked': Omit<KeyLeakedData, keyof KeyEventData>;
}

/** What an identity event adds to IdentityEventData, by event type. */
export interface IdentityEventDetails {
  'identity.created': Record<string, never>;
  'identity.updated': Omit<IdentityUpdatedData, keyof IdentityEventData>;
  'identity.deleted': Record<string, never>;
  'identity.credits_low': Omit<IdentityCreditsLowData, keyof IdentityEventData>;
}
