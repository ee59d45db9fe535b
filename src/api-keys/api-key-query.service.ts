import { Injectable } from '@nestjs/common';
import type { Principal } from '../access/principal';
import { isIdOf } from '../common/ids';
import { Page } from '../common/pagination';
import { IdentitiesService } from '../identities/identities.service';
import { OrganizationPoliciesService } from '../organization-policies/organization-policies.service';
import { assertWithinPrincipal } from '../roles/escalation';
import type { Permission } from '../roles/permissions';
import { ApiKey } from './api-key.entity';
import { API_KEY_ID } from './api-keys.declarations';
import { ApiKeyError, ApiKeyErrorCode } from './api-keys.errors';
import { ApiKeysRepository } from './api-keys.repository';
import { CreditsService } from './credits/credits.service';
import { ListApiKeysQueryDto } from './dto/api-key.dto';
import { ApiKeyResponse } from './dto/api-key-response.dto';
import { KeyPermissions } from './key-permissions';

/**
 * Reads of keys as the API shows them: a page, one key, the key a caller may act on, and the key object
 * itself (effective permissions, live balance, identity). Every write and rotation answers with the same
 * object and finds its key the same way, so they share this service instead of each holding the reads.
 */
@Injectable()
export class ApiKeyQueryService {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly grants: KeyPermissions,
    private readonly credits: CreditsService,
    private readonly identities: IdentitiesService,
    private readonly policies: OrganizationPoliciesService,
  ) {}

  async list(principal: Principal, query: ListApiKeysQueryDto): Promise<Page<ApiKeyResponse>> {
    const policy =
      query.violates_policy === undefined
        ? undefined
        : await this.policies.forOrganization(principal.organizationId);
    const page = await this.keys.page(
      principal.organizationId,
      {
        type: query.type,
        status: query.status,
        ownerId: query.owner_id,
        teamId: query.team_id,
        identityId: query.identity_id,
        search: query.search || undefined,
        violatesPolicy: policy && {
          violates: query.violates_policy!,
          requireExpiration: policy.requireExpiration,
          maxKeyLifetimeDays: policy.maxKeyLifetimeDays,
        },
      },
      query,
    );
    return { data: await this.present(page.data), next_cursor: page.next_cursor };
  }

  async get(principal: Principal, id: string): Promise<ApiKeyResponse> {
    const [response] = await this.present([await this.find(principal, id)]);
    return response;
  }

  /** The key must exist in the caller's organization (404 otherwise, never 403). */
  async find(principal: Principal, id: string): Promise<ApiKey> {
    const key = isIdOf(API_KEY_ID, id)
      ? await this.keys.findInOrganization(principal.organizationId, id)
      : null;
    if (!key) throw new ApiKeyError(ApiKeyErrorCode.NotFound, 'The API key was not found.');
    return key;
  }

  /** Acting on a key whose permissions exceed the caller's (rotating it would hand them its power) is refused. */
  async findManageable(principal: Principal, id: string): Promise<ApiKey> {
    const key = await this.find(principal, id);
    const [permissions] = await this.effectivePermissions([key]);
    assertWithinPrincipal(principal, permissions, 'The target key');
    return key;
  }

  /** Names of the organization's keys among `ids` that are not deleted (usage reports name them). */
  async namesOf(principal: Principal, ids: string[]): Promise<Map<string, string>> {
    return this.keys.namesOf(principal.organizationId, ids);
  }

  /** Key objects: effective permissions, live credit balances and identities, each fetched once for the batch. */
  async present(keys: ApiKey[]): Promise<ApiKeyResponse[]> {
    const organizationId = keys[0]?.organizationId;
    const identityIds = keys.flatMap((key) => (key.identityId ? [key.identityId] : []));
    const [permissions, balances, identities] = await Promise.all([
      this.effectivePermissions(keys),
      this.credits.balances(keys),
      organizationId && identityIds.length
        ? this.identities.summaries(organizationId, identityIds)
        : new Map<string, never>(),
    ]);
    return keys.map((key, i) =>
      ApiKeyResponse.of(key, permissions[i], {
        creditsRemaining: balances.get(key.id) ?? null,
        identity: (key.identityId && identities.get(key.identityId)) || null,
      }),
    );
  }

  /** Effective permissions of each key, as the key check computes them (one rule: KeyPermissions). */
  private async effectivePermissions(keys: ApiKey[]): Promise<ReadonlySet<Permission>[]> {
    return (await this.grants.of(keys)).map((grant) => grant.permissions);
  }
}
