import { Injectable } from '@nestjs/common';
import { UsersService } from '../../accounts/users.service';
import type { User } from '../../accounts/user.entity';
import { AccessTokenClaims, AccessTokenService } from '../../auth/access-token.service';
import { DomainError, ErrorKind } from '../../common/domain-error';
import { RolesService } from '../../roles/roles.service';
import { SessionLiveness } from '../../sessions/session-liveness';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import type { Principal } from '../principal';

const DENIAL_CODES = new Set<string>(Object.values(AccessDenialCode));

/**
 * An access token to a Principal, or the reason it is refused. The user row is read on every request
 * (a primary-key lookup, batched with the other requests of the same turn: UsersService
 * .findMemberForRequest) so a deactivation or a role change applies to the very next request; so is the
 * dashboard session row of a token that names one (`sid`), so a sign-out does too.
 */
@Injectable()
export class AccessTokenResolver {
  constructor(
    private readonly tokens: AccessTokenService,
    private readonly users: UsersService,
    private readonly roles: RolesService,
    private readonly sessions: SessionLiveness,
  ) {}

  looksLikeAccessToken(value: string): boolean {
    return AccessTokenService.looksLikeAccessToken(value);
  }

  async resolve(token: string): Promise<Principal | AccessDenial> {
    let claims: AccessTokenClaims;
    try {
      claims = this.tokens.verify(token);
    } catch (error) {
      const denial = asDenial(error);
      if (denial) return denial;
      throw error;
    }
    // A dashboard session's token lives only as long as its session: the two reads go out together.
    const [user, sessionLive] = await Promise.all([
      this.users.findMemberForRequest(claims.org, claims.sub),
      claims.sid === undefined ? true : this.sessions.isLive(claims.sid, claims.sub),
    ]);
    if (user && user.active && !sessionLive) {
      return new AccessDenial(
        AccessDenialCode.SessionExpired,
        'The dashboard session of this access token has ended; sign in again.',
      );
    }
    return this.principalOf(user);
  }

  /**
   * The Principal of a member by id, as their access token would get now, or why it would be refused
   * (a task token acts for the user who created its task, never beyond them).
   */
  async byId(organizationId: string, userId: string): Promise<Principal | AccessDenial> {
    return this.principalOf(await this.users.findMemberForRequest(organizationId, userId));
  }

  private async principalOf(user: Readonly<User> | null): Promise<Principal | AccessDenial> {
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
