import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Principal } from '../access/principal';
import { actorOf, RequestOrigin } from '../audit/audit.service';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { OrganizationPoliciesService } from '../organization-policies/organization-policies.service';
import { ApiKeyValues, keyStart } from './api-key-format';
import { ApiKey, keyStatus } from './api-key.entity';
import { ApiKeyQueryService } from './api-key-query.service';
import { ApiKeyError, ApiKeyErrorCode } from './api-keys.errors';
import { ApiKeysRepository } from './api-keys.repository';
import { RotateApiKeyDto } from './dto/api-key.dto';
import { CreatedApiKeyResponse } from './dto/api-key-response.dto';
import { KeyChangeRecorder } from './key-change-recorder';
import { nextRotationAfter } from './rotation-policy';

/**
 * A new value for a live key, with a grace period for the old one: asked for (POST /v1/api-keys/:id/rotate)
 * or due by the key's rotation policy (KeyRotationJob). One service, so both rotate the same way; apart
 * from the lifecycle because issuing a value has its own rules (grace, the policy's next date, who sees it).
 */
@Injectable()
export class ApiKeyRotationService {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly queries: ApiKeyQueryService,
    private readonly changes: KeyChangeRecorder,
    private readonly invalidations: InvalidationBus,
    private readonly values: ApiKeyValues,
    private readonly policies: OrganizationPoliciesService,
  ) {}

  /** New value now; the old one keeps working for `grace_period_seconds` (default 0: at once). */
  async rotate(
    principal: Principal,
    id: string,
    dto: RotateApiKeyDto,
    origin: RequestOrigin,
  ): Promise<CreatedApiKeyResponse> {
    const key = await this.queries.findManageable(principal, id);
    const status = keyStatus(key);
    if (status !== 'active') {
      throw new ApiKeyError(ApiKeyErrorCode.KeyNotActive, `A ${status} key cannot be rotated.`);
    }
    // A rotation issues a new credential, so it meets the organization's rules as a new key would: a key
    // made before a rule (no expiration, or one too far out) is refused until its expiration is set by
    // PATCH. A rotation policy's own rotations are not refused: they only shorten a value's life.
    await this.policies.assertExpirationAllowed(principal.organizationId, key.expiration);
    const { key: saved, value } = await this.keys.transaction((manager) =>
      this.rotateInTransaction(manager, key, dto.grace_period_seconds ?? 0, actorOf(principal), origin),
    );
    this.invalidations.publish({ kind: 'key', keyId: saved.id });
    const [response] = await this.queries.present([saved]);
    return { ...response, key: value };
  }

  /** Shared by manual rotation and rotation policies. */
  async rotateInTransaction(
    manager: EntityManager,
    key: ApiKey,
    graceSeconds: number,
    actor: ReturnType<typeof actorOf>,
    origin?: RequestOrigin,
  ): Promise<{ key: ApiKey; value: string }> {
    const now = new Date();
    const value = this.values.generate();
    const previousHash = key.keyHash;
    key.keyHash = this.values.hash(value);
    key.start = keyStart(value);
    // The replaced value stays recognizable, so it is refused as revoked (not as unknown) once its
    // grace period ends; with no grace period that is now.
    key.previousKeyHash = previousHash;
    key.previousKeyExpiresAt = new Date(now.getTime() + graceSeconds * 1000);
    key.previousKeyLastUsedAt = null;
    key.lastRotatedAt = now;
    if (key.rotationEnabled && key.rotationDays) {
      key.nextRotationAt = nextRotationAfter(now, key.rotationDays);
    }
    const saved = await this.keys.save(manager, key);
    await this.changes.record(manager, [
      {
        key: saved,
        action: 'key.rotated',
        actor,
        origin,
        details: {
          automatic: actor.type === 'system',
          grace_period_seconds: graceSeconds,
          previous_key_expires_at: graceSeconds > 0 ? key.previousKeyExpiresAt.toISOString() : null,
        },
        // Only a policy rotation hands the new value to the organization's webhooks; a manual
        // rotation returns it to the caller instead.
        secret: actor.type === 'system' ? value : undefined,
      },
    ]);
    return { key: saved, value };
  }
}
