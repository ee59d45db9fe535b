import { Injectable } from '@nestjs/common';
import { ApiKeyValues } from '../../api-keys/api-key-format';
import { keyStatus } from '../../api-keys/api-key.entity';
import { LEAKED } from '../../api-keys/key-leaks';
import { KeyLookup } from '../../api-keys/key-lookup';
import { KeyPermissions } from '../../api-keys/key-permissions';
import { KeyUsageRecorder } from '../../api-keys/key-usage-recorder';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import type { Principal } from '../principal';
import { ConnectionHashMemo } from './connection-hash-memo';
import { KeyCache, ResolvedKey } from './key-cache';
import type { PresentedCredential } from './presented-credential';

// Principals of cached key records, per channel the key came through. A key record is replaced, not
// changed, when the key changes, so a Principal built once serves every request of that record.
const principals = new WeakMap<ResolvedKey, Partial<Record<PresentedCredential['via'], Principal>>>();

function principalFor(resolved: ResolvedKey, via: PresentedCredential['via']): Principal {
  let byChannel = principals.get(resolved);
  if (!byChannel) principals.set(resolved, (byChannel = {}));
  const known = byChannel[via];
  if (known) return known;
  const { key } = resolved;
  const principal: Principal = Object.freeze({
    kind: 'api_key',
    organizationId: key.organizationId,
    userId: key.type === 'personal' ? key.ownerId : null,
    apiKeyId: key.id,
    role: key.role,
    permissions: resolved.permissions,
    key: Object.freeze({
      id: key.id,
      organizationId: key.organizationId,
      name: key.name,
      type: key.type,
      expiresAt: key.expiration,
      presentedVia: via,
      hideCredentials: key.hideCredentials,
      allowedIps: key.allowedIps,
      allowedReferrers: key.allowedReferrers,
      rateLimit: Object.freeze({ perMinute: key.rateLimitPerMinute, perHour: key.rateLimitPerHour }),
      meta: Object.freeze(key.meta ?? {}),
      identity: resolved.identity,
      credits: key.creditsRemaining === null ? null : key,
      identityControls: resolved.identityControls,
    }),
  });
  byChannel[via] = principal;
  return principal;
}

/** Why a resolved key is refused now, in the status precedence: revoked, expired, disabled. */
function refusalOf(resolved: ResolvedKey, now: Date): AccessDenial | undefined {
  const { key } = resolved;
  const status = keyStatus(key, now);
  if (status === 'revoked' && key.revokedReason === LEAKED) {
    // Its holder learns why, and that a new key (not a retry) is the way out.
    return new AccessDenial(
      AccessDenialCode.KeyRevoked,
      'The API key has been revoked because it was reported leaked (found in public); create a new key.',
    );
  }
  if (status === 'revoked' || resolved.ownerActive === false) {
    return new AccessDenial(AccessDenialCode.KeyRevoked, 'The API key has been revoked.');
  }
  if (status === 'expired') return new AccessDenial(AccessDenialCode.KeyExpired, 'The API key has expired.');
  if (status === 'disabled') {
    return new AccessDenial(
      AccessDenialCode.KeyDisabled,
      'The API key is disabled; an operator can enable it again.',
    );
  }
  if (resolved.matchedPrevious && !(key.previousKeyExpiresAt && key.previousKeyExpiresAt > now)) {
    return new AccessDenial(
      AccessDenialCode.KeyRevoked,
      'This key value was replaced by a rotation and its grace period has ended.',
    );
  }
  return undefined;
}

/**
 * An API key to a Principal, or the reason it is refused. In order: shape and checksum (no database),
 * then the cache or one indexed query, then what depends on the clock: expiry and the end of a
 * rotation's grace period.
 */
@Injectable()
export class ApiKeyResolver {
  private readonly load = (hash: string) => this.loadByHash(hash);
  private readonly hashes = new ConnectionHashMemo();
  /** The same for the values a service verifies (POST /v1/keys/verify), apart from its own key's. */
  private readonly verifiedHashes = new ConnectionHashMemo();

  constructor(
    private readonly values: ApiKeyValues,
    private readonly keys: KeyLookup,
    private readonly grants: KeyPermissions,
    private readonly cache: KeyCache,
    private readonly usage: KeyUsageRecorder,
  ) {}

  /**
   * `connection` is the socket the credential came on (see ConnectionHashMemo). Answers directly, not in
   * a promise, when the key's record is in the cache.
   */
  resolve(
    credential: PresentedCredential,
    connection: object,
    clientIp: string | null,
  ): Principal | AccessDenial | Promise<Principal | AccessDenial> {
    let hash = this.hashes.recall(connection, credential.value);
    if (hash === undefined) {
      // Shape and checksum first (no database); a value recalled on its connection passed them.
      if (!this.values.isWellFormed(credential.value)) {
        return new AccessDenial(
          AccessDenialCode.MalformedKey,
          'The API key is malformed (wrong shape or checksum).',
        );
      }
      hash = this.values.hash(credential.value);
      this.hashes.remember(connection, credential.value, hash);
    }
    const resolved = this.cache.resolve(hash, this.load);
    return resolved instanceof Promise
      ? resolved.then((loaded) => this.admit(loaded, credential.via, clientIp))
      : this.admit(resolved, credential.via, clientIp);
  }

  /**
   * A key value another service presents for checking (POST /v1/keys/verify by a service of
   * `organizationId`): the key's Principal when it is one of that organization's keys (even a refused
   * one, so the answer can name it), and why a request with it would be refused, as `resolve` decides.
   * A key of another organization is not known here: it answers exactly as an unknown value, before
   * anything about it is read or marked used. `connection`, the service's socket: its last verified value's
   * hash is remembered as the connection's own key's is (a service checking one caller's requests sends
   * the same value again and again).
   */
  async resolveForOrganization(
    organizationId: string,
    value: string,
    clientIp: string | null,
    connection: object,
  ): Promise<{ principal: Principal | null; denial: AccessDenial | null }> {
    let hash = this.verifiedHashes.recall(connection, value);
    if (hash === undefined) {
      if (!this.values.isWellFormed(value)) {
        const denial = new AccessDenial(
          AccessDenialCode.MalformedKey,
          'The API key is malformed (wrong shape or checksum).',
        );
        return { principal: null, denial };
      }
      hash = this.values.hash(value);
      this.verifiedHashes.remember(connection, value, hash);
    }
    const loaded = await this.cache.resolve(hash, this.load);
    const resolved = loaded?.key.organizationId === organizationId ? loaded : null;
    const admitted = this.admit(resolved, 'x-api-key', clientIp);
    if (!(admitted instanceof AccessDenial)) return { principal: admitted, denial: null };
    // As if sent in X-API-Key: the verified key is described, never forwarded.
    return { principal: resolved && principalFor(resolved, 'x-api-key'), denial: admitted };
  }

  /** A resolved record (or none) to the Principal, or the reason the key is refused now. */
  private admit(
    resolved: ResolvedKey | null,
    via: PresentedCredential['via'],
    clientIp: string | null,
  ): Principal | AccessDenial {
    if (!resolved) return new AccessDenial(AccessDenialCode.InvalidCredentials, 'The API key is not valid.');

    const { key } = resolved;
    const denial = refusalOf(resolved, new Date());
    // A refusal of a key that did resolve counts in that key's usage (see DenialRecorder).
    if (denial) return denial.about(key, resolved.identity);
    this.usage.markUsed(key.id, resolved.matchedPrevious, clientIp);
    return principalFor(resolved, via);
  }

  /**
   * The Principal of a key by id, as a request presenting it now would get, or why it would be refused:
   * a task token acts for the key that created its task, never beyond it. One uncached read: a task
   * token's requests are an agent's calls, and the key's state must be today's.
   */
  async byId(organizationId: string, keyId: string): Promise<Principal | AccessDenial> {
    const found = await this.keys.byId(organizationId, keyId);
    if (!found) return new AccessDenial(AccessDenialCode.KeyRevoked, 'The API key has been deleted.');
    const [grant] = await this.grants.of([found.key]);
    const resolved: ResolvedKey = { ...found, ...grant };
    return refusalOf(resolved, new Date()) ?? principalFor(resolved, 'bearer');
  }

  /** On a cache miss: the key row, then its effective permissions through the key permissions service. */
  private async loadByHash(hash: string): Promise<ResolvedKey | null> {
    const found = await this.keys.byValueHash(hash);
    if (!found) return null;
    const [grant] = await this.grants.of([found.key]);
    return { ...found, ...grant };
  }
}
