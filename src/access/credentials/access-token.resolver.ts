import { Injectable } from '@nestjs/common';
import { UsersService } from '../../accounts/users.service';
import { AccessTokenService } from '../../auth/access-token.service';
import { DomainError, ErrorKind } from '../../common/domain-error';
import { RolesService } from '../../roles/roles.service';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import type { Principal } from '../principal';

const DENIAL_CODES = new Set<string>(Object.values(AccessDenialCode));

/**
 * An access token to a Principal, or the reason it is refused. The user row is read on every request
 * (a primary-key lookup) so a deactivation or a role change applies to the very next request.
 */
@Injectable()
export class AccessTokenResolver {
  constructor(
    private readonly tokens: AccessTokenService,
    private readonly users: UsersService,
    private readonly roles: RolesService,
  ) {}

  looksLikeAccessToken(value: string): boolean {
    return AccessTokenService.looksLikeAccessToken(value);
  }

  async resolve(token: string): Promise<Principal | AccessDenial> {
    let claims: { sub: string; org: string };
    try {
      claims = this.tokens.verify(token);
    } catch (error) {
      const denial = asDenial(error);
      if (denial) return denial;
      throw error;
    }
    const user = await this.users.findMember(claims.org, claims.sub);
    if (!user) return new AccessDenial(AccessDenialCode.InvalidCredentials, 'The access token is not valid.');
    if (!user.active) {
      return new AccessDenial(AccessDenialCode.UserDeactivated, 'The user account is deactivated.');
    }
    const permissions = await this.roles.permissionsOf(user.organizationId, user.role);
    return {
      kind: 'user',
      organizationId: user.organizationId,
      userId: user.id,
      apiKeyId: null,
      role: user.role,
      permissions: permissions ?? new Set(),
    };
  }
}

/** The token service refuses a token (bad signature, expired) with an error naming the reason. */
function asDenial(error: unknown): AccessDenial | undefined {
  if (!(error instanceof DomainError) || error.kind !== ErrorKind.Unauthenticated) return undefined;
  return DENIAL_CODES.has(error.code) ? new AccessDenial(error.code, error.detail) : undefined;
}
