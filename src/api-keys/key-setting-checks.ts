import { Injectable } from '@nestjs/common';
import type { Principal } from '../access/principal';
import { TeamsService } from '../accounts/teams.service';
import { IdentitiesService } from '../identities/identities.service';
import { OrganizationPoliciesService } from '../organization-policies/organization-policies.service';
import { assertWithinPrincipal } from '../roles/escalation';
import { RolesService } from '../roles/roles.service';
import { ApiKeyError, ApiKeyErrorCode } from './api-keys.errors';

/**
 * The checks a key's settings meet on create and PATCH: a role the caller may hand out, a team and an
 * identity of the caller's organization, an expiration the organization's policy allows. Apart from
 * the lifecycle so that service keeps to what a change writes, and so both writes check the same way.
 */
@Injectable()
export class KeySettingChecks {
  constructor(
    private readonly roles: RolesService,
    private readonly teams: TeamsService,
    private readonly identities: IdentitiesService,
    private readonly policies: OrganizationPoliciesService,
  ) {}

  /** The role must exist and grant no more than the caller holds. */
  async assertGrantableRole(principal: Principal, role: string): Promise<void> {
    const rolePermissions = await this.roles.requireRole(principal.organizationId, role);
    assertWithinPrincipal(principal, rolePermissions, 'The key');
  }

  async assertExpirationAllowed(principal: Principal, expiration: Date | null): Promise<void> {
    await this.policies.assertExpirationAllowed(principal.organizationId, expiration);
  }

  /** The team a key of `type` belongs to: required for team keys, refused for the others. */
  async team(principal: Principal, type: string, teamId: string | undefined): Promise<string | null> {
    if (type !== 'team') {
      if (teamId)
        throw new ApiKeyError(ApiKeyErrorCode.ValidationFailed, 'team_id applies to team keys only.', {
          errors: [{ field: 'team_id', message: 'team_id is only allowed for team keys' }],
        });
      return null;
    }
    if (!teamId) {
      throw new ApiKeyError(ApiKeyErrorCode.ValidationFailed, 'A team key needs team_id.', {
        errors: [{ field: 'team_id', message: 'team_id is required for team keys' }],
      });
    }
    if (!(await this.teams.exists(principal.organizationId, teamId))) {
      throw new ApiKeyError(ApiKeyErrorCode.UnknownTeam, 'The team does not exist.', {
        errors: [{ field: 'team_id', message: 'team not found' }],
      });
    }
    return teamId;
  }

  /** The identity a key names: one of the caller's organization (400 unknown_identity otherwise), or null. */
  async identity(principal: Principal, identityId: string | null | undefined): Promise<string | null> {
    if (identityId === null || identityId === undefined) return null;
    return (await this.identities.requireForKey(principal.organizationId, identityId)).id;
  }
}
