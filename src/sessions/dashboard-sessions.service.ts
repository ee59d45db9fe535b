import { Inject, Injectable } from '@nestjs/common';
import type { User } from '../accounts/user.entity';
import { UsersService } from '../accounts/users.service';
import { AccessTokenService } from '../auth/access-token.service';
import { AuthService } from '../auth/auth.service';
import type { TokenRequestDto } from '../auth/dto/auth.dto';
import { Clock } from '../common/clock';
import { newId } from '../common/ids';
import { ConfigOf } from '../config/config-namespace';
import { sessionsConfig } from '../config/namespaces';
import { RolesService } from '../roles/roles.service';
import { DashboardSessionsRepository } from './dashboard-sessions.repository';
import { DashboardSessionResponse, SessionUserResponse } from './dto/dashboard-session.dto';
import { RefreshTokens } from './refresh-tokens';
import { sessionEndAt } from './session-lifetime';
import { SessionError, SessionErrorCode } from './sessions.errors';

/** Who signs in, as the session row records it. */
export interface SessionClient {
  ip: string | null;
  userAgent: string | null;
}

export interface StartedSession {
  /** For the cookie only: never in a response body, never stored. */
  refreshToken: string;
  /** The absolute cap, for the cookie's Max-Age. */
  maxAgeSeconds: number;
  response: DashboardSessionResponse;
}

// A User-Agent is the client's to choose: kept for display, bounded.
const MAX_USER_AGENT_LENGTH = 512;

/**
 * Dashboard sessions: an httpOnly, SameSite=Strict refresh cookie that yields short-lived access
 * tokens, which the page holds in memory only. No credential is ever readable by page scripts; a
 * reload costs one refresh; sign-out revokes the row, and the key check refuses the session's access
 * tokens from then on (each carries the session id as `sid`).
 */
@Injectable()
export class DashboardSessionsService {
  private readonly idleMs: number;
  private readonly absoluteMs: number;

  constructor(
    @Inject(sessionsConfig.KEY) config: ConfigOf<typeof sessionsConfig>,
    private readonly auth: AuthService,
    private readonly tokens: AccessTokenService,
    private readonly users: UsersService,
    private readonly roles: RolesService,
    private readonly sessions: DashboardSessionsRepository,
    private readonly refreshTokens: RefreshTokens,
    private readonly clock: Clock,
  ) {
    this.idleMs = config.idleMinutes * 60_000;
    this.absoluteMs = config.absoluteHours * 3_600_000;
  }

  /** Email and password (through the login-attempt limiter, as POST /v1/auth/token) to a new session. */
  async signIn(credentials: TokenRequestDto, client: SessionClient): Promise<StartedSession> {
    const user = await this.auth.authenticate(credentials, client.ip ?? 'unknown');
    const now = this.clock.date();
    await this.sessions.deleteEndedOf(user.id, now);
    const refreshToken = this.refreshTokens.generate();
    const id = newId('dashboardSession');
    await this.sessions.insert({
      id,
      organizationId: user.organizationId,
      userId: user.id,
      refreshHash: this.refreshTokens.hash(refreshToken),
      createdAt: now,
      lastUsedAt: now,
      expiresAt: new Date(now.getTime() + this.absoluteMs),
      revokedAt: null,
      userAgent: client.userAgent?.slice(0, MAX_USER_AGENT_LENGTH) ?? null,
      ip: client.ip,
    });
    return {
      refreshToken,
      maxAgeSeconds: this.absoluteMs / 1000,
      response: await this.grant(user, id),
    };
  }

  /** A fresh access token for a live session; the session's idle time starts again. */
  async refresh(refreshToken: string | undefined): Promise<DashboardSessionResponse> {
    const session = refreshToken
      ? await this.sessions.findByRefreshHash(this.refreshTokens.hash(refreshToken))
      : null;
    if (!session) throw unknownSession();
    const now = this.clock.now();
    if (sessionEndAt(session, now, this.idleMs)) {
      throw new SessionError(
        SessionErrorCode.SessionExpired,
        'The dashboard session has ended; sign in again.',
      );
    }
    const user = await this.users.findMember(session.organizationId, session.userId);
    if (!user?.active) {
      // Reactivating the user must not bring this session back.
      await this.sessions.revoke({ id: session.id }, new Date(now));
      throw unknownSession();
    }
    await this.sessions.markUsed(session.id, new Date(now));
    return this.grant(user, session.id);
  }

  /** Revokes the session of this refresh token, if any: signing out twice is not an error. */
  async signOut(refreshToken: string | undefined): Promise<void> {
    if (!refreshToken) return;
    await this.sessions.revoke({ refreshHash: this.refreshTokens.hash(refreshToken) }, this.clock.date());
  }

  private async grant(user: User, sessionId: string): Promise<DashboardSessionResponse> {
    const permissions = (await this.roles.permissionsOf(user.organizationId, user.role)) ?? new Set();
    return {
      ...this.tokens.issue(user, sessionId),
      user: SessionUserResponse.of(user, permissions),
    };
  }
}

const unknownSession = (): SessionError =>
  new SessionError(SessionErrorCode.UnknownSession, 'No dashboard session goes with this request; sign in.');
