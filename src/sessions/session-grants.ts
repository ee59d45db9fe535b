import { Injectable } from '@nestjs/common';
import type { User } from '../accounts/user.entity';
import { AccessTokenService } from '../auth/access-token.service';
import { RolesService } from '../roles/roles.service';
import { DashboardSessionResponse, SessionUserResponse } from './dto/dashboard-session.dto';

/** A refresh token for the cookie only: never in a response body, never stored. */
export interface SessionCookie {
  refreshToken: string;
  /** What is left until the session's absolute cap: the cookie's Max-Age. */
  maxAgeSeconds: number;
}

/**
 * What a signed-in or refreshed dashboard session answers with: an access token carrying the session
 * id (`sid`), and the user with their permissions. Its own provider because sign-in and refresh both
 * answer it, and neither needs the roles or the token signer for anything else.
 */
@Injectable()
export class SessionGrants {
  constructor(
    private readonly roles: RolesService,
    private readonly tokens: AccessTokenService,
  ) {}

  async grant(user: User, sessionId: string): Promise<DashboardSessionResponse> {
    const permissions = (await this.roles.permissionsOf(user.organizationId, user.role)) ?? new Set();
    return {
      ...this.tokens.issue(user, sessionId),
      user: SessionUserResponse.of(user, permissions),
    };
  }
}
