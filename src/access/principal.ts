import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { CreditedKey } from '../api-keys/credits/credit-holders';
import type { IdentityControls, KeyIdentity } from '../api-keys/key-identity';
import type { Permission } from '../roles/permissions';

// Declared here, beside the type, rather than in the base layer's request observer (common/ imports
// nothing above it).
declare module 'http' {
  interface IncomingMessage {
    /** Set by ApiKeyGuard once the credential is resolved. */
    principal?: Principal;
  }
}

/**
 * Who is calling, as resolved by ApiKeyGuard from exactly one credential. Services take it as their
 * first argument and scope every query by `organizationId`.
 */
export interface Principal {
  kind: 'user' | 'api_key' | 'task';
  organizationId: string;
  /** The acting user: the token's user, or a personal key's owner. */
  userId: string | null;
  apiKeyId: string | null;
  role: string;
  /** Effective permissions for this request, already narrowed (e.g. personal key ∩ owner). */
  permissions: ReadonlySet<Permission>;
  /**
   * Present when the credential is an API key: what later checks (restrictions, limits) need. For a task
   * token, the key that created the task: its windows and usage count the token's requests.
   */
  key?: KeyContext;
  /** Present when the credential is a task token: the one run it may act for (the permission step). */
  task?: TaskRunScope;
  /** Present when the credential is an OAuth access token: the grant it belongs to (kind 'user'). */
  oauth?: OAuthGrantScope;
}

/**
 * What an OAuth access token acts under: the grant a user gave a client. Its requests are rate-limited
 * per grant (`windows`: a key's windows, with the OAUTH_REQUESTS_PER_* limits, counted under the grant
 * id) and audited as the user's with the client named.
 */
export interface OAuthGrantScope {
  grantId: string;
  clientId: string;
  windows: KeyContext;
}

/** What a task token may touch: its task, and the files of that task (attachments and outputs). */
export interface TaskRunScope {
  taskId: string;
  fileIds: ReadonlySet<string>;
}

export interface KeyContext {
  id: string;
  /** The key's organization: its rate-limit windows and balances share its hash slot on a Redis Cluster. */
  organizationId: string;
  name: string;
  type: 'personal' | 'team' | 'service';
  expiresAt: Date | null;
  /** How the caller sent the key; with `hideCredentials` it decides what may be forwarded. */
  presentedVia: 'bearer' | 'x-api-key' | 'query';
  hideCredentials: boolean;
  allowedIps: readonly string[];
  allowedReferrers: readonly string[];
  rateLimit: { perMinute: number | null; perHour: number | null };
  /** The integrator's data on the key ({} when none). */
  meta: Readonly<Record<string, unknown>>;
  /** The key's identity as loaded with its record (id, external_id, meta); null: none. */
  identity: KeyIdentity | null;
  /** The key's balance as loaded (null: unlimited); the credits step spends the live one. */
  credits: CreditedKey | null;
  /**
   * The identity's windows and shared balance (null: no identity), which every request of the key
   * must fit beside the key's own (the rate-limit and credits steps).
   */
  identityControls: IdentityControls | null;
}

/** Handler parameter decorator: `list(@Principal() principal: Principal)`. */
export const Principal = createParamDecorator((_data: unknown, context: ExecutionContext): Principal => {
  const principal = context.switchToHttp().getRequest<Request>().principal;
  // ApiKeyGuard runs before every non-public handler; reaching here without one is a wiring bug.
  if (!principal) throw new Error('@Principal() used on a route that has no resolved principal');
  return principal;
});
