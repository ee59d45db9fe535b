import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '../access/principal';
import { actorOf, AuditService, RequestOrigin } from '../audit/audit.service';
import { Clock } from '../common/clock';
import { OrganizationPoliciesResponse, UpdateOrganizationPoliciesDto } from './dto/organization-policies.dto';
import { OrganizationPolicyError, OrganizationPolicyErrorCode } from './organization-policies.errors';
import { OrganizationPoliciesRepository } from './organization-policies.repository';
import { LeakResponse, OrganizationPolicy } from './organization-policy.entity';

/** An organization's key rules as the services that enforce them read them. */
export interface KeyPolicy {
  leakResponse: LeakResponse;
  maxKeyLifetimeDays: number | null;
  requireExpiration: boolean;
}

export const DEFAULT_KEY_POLICY: KeyPolicy = Object.freeze({
  leakResponse: 'revoke',
  maxKeyLifetimeDays: null,
  requireExpiration: false,
});

const DAY_MS = 86_400_000;

const policyOf = (row: OrganizationPolicy | null): KeyPolicy =>
  row
    ? {
        leakResponse: row.leakResponse,
        maxKeyLifetimeDays: row.maxKeyLifetimeDays,
        requireExpiration: row.requireExpiration,
      }
    : DEFAULT_KEY_POLICY;

const present = (policy: KeyPolicy): OrganizationPoliciesResponse => ({
  leak_response: policy.leakResponse,
  max_key_lifetime_days: policy.maxKeyLifetimeDays,
  require_expiration: policy.requireExpiration,
});

/** Whether the policy constrains expirations at all (a maximum implies that one is required). */
export function limitsExpiration(policy: KeyPolicy): boolean {
  return policy.requireExpiration || policy.maxKeyLifetimeDays !== null;
}

/**
 * Organization policies (GET|PATCH /v1/organization/policies): what a leaked key's report does, and
 * the expirations keys may be given. The rules apply when an expiration is set (key create, PATCH);
 * keys made before a rule are left as they are and listed by `GET /v1/api-keys?violates_policy=true`.
 */
@Injectable()
export class OrganizationPoliciesService {
  constructor(
    private readonly policies: OrganizationPoliciesRepository,
    private readonly audit: AuditService,
    private readonly clock: Clock,
  ) {}

  async get(principal: Principal): Promise<OrganizationPoliciesResponse> {
    return present(await this.forOrganization(principal.organizationId));
  }

  async update(
    principal: Principal,
    dto: UpdateOrganizationPoliciesDto,
    origin: RequestOrigin,
  ): Promise<OrganizationPoliciesResponse> {
    const updated = await this.policies.transaction(async (manager) => {
      const row = await this.policies.lock(manager, principal.organizationId);
      const before = present(policyOf(row));
      if (dto.leak_response !== undefined) row.leakResponse = dto.leak_response;
      if (dto.max_key_lifetime_days !== undefined) row.maxKeyLifetimeDays = dto.max_key_lifetime_days;
      if (dto.require_expiration !== undefined) row.requireExpiration = dto.require_expiration;
      const after = present(policyOf(await this.policies.save(manager, row)));
      const changes = Object.fromEntries(
        (Object.keys(after) as (keyof OrganizationPoliciesResponse)[])
          .filter((field) => before[field] !== after[field])
          .map((field) => [field, { from: before[field], to: after[field] }]),
      );
      await this.audit.append(manager, [
        {
          organizationId: principal.organizationId,
          action: 'organization.policies_updated',
          actor: actorOf(principal),
          origin,
          details: { changes, policies: after },
        },
      ]);
      return after;
    });
    return updated;
  }

  async forOrganization(organizationId: string): Promise<KeyPolicy> {
    return policyOf(await this.policies.find(organizationId));
  }

  /** The policies of several organizations (defaults for those without a row), in the caller's transaction. */
  async forOrganizations(
    organizationIds: string[],
    manager?: EntityManager,
  ): Promise<Map<string, KeyPolicy>> {
    const rows = await this.policies.findMany([...new Set(organizationIds)], manager);
    const found = new Map(rows.map((row) => [row.organizationId, policyOf(row)]));
    return new Map(organizationIds.map((id) => [id, found.get(id) ?? DEFAULT_KEY_POLICY]));
  }

  /**
   * Refuses an expiration the organization's policy does not allow for a key being created or changed
   * now (400 policy_violation, naming the rule and the `expiration` field).
   */
  async assertExpirationAllowed(organizationId: string, expiration: Date | null): Promise<void> {
    const policy = await this.forOrganization(organizationId);
    if (!limitsExpiration(policy)) return;
    const max = policy.maxKeyLifetimeDays;
    if (!expiration) {
      const rule = max !== null ? 'max_key_lifetime_days' : 'require_expiration';
      const why = max !== null ? `keys must expire within ${max} days` : 'keys must have an expiration';
      throw violation(rule, `The organization's policy (${rule}) requires an expiration: ${why}.`, why, max);
    }
    if (max !== null && expiration.getTime() > this.clock.now() + max * DAY_MS) {
      const why = `expiration must be at most ${max} days ahead`;
      throw violation(
        'max_key_lifetime_days',
        `The organization's policy (max_key_lifetime_days) allows keys to live at most ${max} days.`,
        why,
        max,
      );
    }
  }
}

function violation(
  rule: 'max_key_lifetime_days' | 'require_expiration',
  detail: string,
  fieldMessage: string,
  max: number | null,
): OrganizationPolicyError {
  return new OrganizationPolicyError(OrganizationPolicyErrorCode.PolicyViolation, detail, {
    errors: [{ field: 'expiration', message: fieldMessage }],
    extensions: { rule, max_key_lifetime_days: max },
  });
}
