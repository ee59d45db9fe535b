import { Inject, Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { User } from '../accounts/user.entity';
import { UsersService } from '../accounts/users.service';
import { AuditService, RequestOrigin } from '../audit/audit.service';
import { AccessTokenService } from '../auth/access-token.service';
import { AuthService } from '../auth/auth.service';
import type { TokenRequestDto } from '../auth/dto/auth.dto';
import { Clock } from '../common/clock';
import { newId } from '../common/ids';
import { DASHBOARD_SESSION_ID } from './sessions.declarations';
import { ConfigOf } from '../config/config-namespace';
import { sessionsConfig } from '../config/namespaces';
import { RolesService } from '../roles/roles.service';
import type { DashboardSession } from './dashboard-session.entity';
import { DashboardSessionsRepository } from './dashboard-sessions.repository';
import { DashboardSessionResponse, SessionUserResponse } from './dto/dashboard-session.dto';
import { RefreshTokens } from './refresh-tokens';
import { sessionEndAt } from './session-lifetime';
import { SessionError, SessionErrorCode } from './sessions.errors';

/** A refresh token for the cookie only: never in a response body, never stored. */
export interface SessionCookie {
  refreshToken: string;
  /** What is left until the session's absolute cap: the cookie's Max-Age. */
  maxAgeSeconds: number;
}

export interface StartedSession {
  cookie: SessionCookie;
  response: DashboardSessionResponse;
}

export interface RefreshedSession {
  /** The value the cookie rotates to; none when a concurrent refresh already rotated it (the grace). */
  cookie?: SessionCookie;
  response: DashboardSessionResponse;
}

/**
 * How long a refresh token a refresh replaced still yields an access token (without rotating the cookie
 * again): two tabs that refresh at the same moment send the same cookie, and the one that comes second
 * must not sign both out. Past it, the replaced token coming back is reuse, and ends the session.
 */
export const REFRESH_REUSE_GRACE_MS = 5_000;

// A User-Agent is the client's to choose: kept for display, bounded.
const MAX_USER_AGENT_LENGTH = 512;

/**
 * Dashboard sessions: an httpOnly, SameSite=Strict refresh cookie that yields short-lived access
 * tokens, which the page holds in memory only. No credential is ever readable by page scripts; a
 * reload costs one refresh; sign-out revokes the row, and the key check refuses the session's access
 * tokens from then on (each carries the session id as `sid`). Every refresh rotates the cookie's value;
 * a replaced value presented again past REFRESH_REUSE_GRACE_MS means someone else holds the session
 * (a copied cookie), so the whole session ends, as at sign-out.
 */
@Injectable()
export class DashboardSessionsService {
  private readonly logger = new Logger('DashboardSessions');
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
    private readonly audit: AuditService,
  ) {
    this.idleMs = config.idleMinutes * 60_000;
    this.absoluteMs = config.absoluteHours * 3_600_000;
  }

  /**
   * Email and password (through the login-attempt limiter, as POST /v1/auth/token) to a new session.
   * Only a successful sign-in is audited (`session.signed_in`, with the session): a failed one writes
   * nothing, so guessing cannot grow an organization's log, and its answer cannot depend on whether the
   * email names a user of some organization.
   */
  async signIn(credentials: TokenRequestDto, client: RequestOrigin): Promise<StartedSession> {
    const user = await this.auth.authenticate(credentials, client.ip ?? 'unknown');
    const now = this.clock.date();
    await this.sessions.deleteEndedOf(user.id, now);
    const refreshToken = this.refreshTokens.generate();
    const id = newId(DASHBOARD_SESSION_ID);
    await this.sessions.transaction(async (manager) => {
      await this.sessions.insert(
        {
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
        },
        manager,
      );
      await this.recordSession(manager, 'session.signed_in', user.organizationId, user.id, id, client);
    });
    return {
      cookie: { refreshToken, maxAgeSeconds: this.absoluteMs / 1000 },
      response: await this.grant(user, id),
    };
  }

  /**
   * A fresh access token for a live session and a new value for its cookie; the session's idle time
   * starts again. The value a refresh replaced yields a token without a new cookie for
   * REFRESH_REUSE_GRACE_MS, and ends the session when it comes back later.
   */
  async refresh(refreshToken: string | undefined): Promise<RefreshedSession> {
    if (!refreshToken) throw unknownSession();
    const hash = this.refreshTokens.hash(refreshToken);
    const now = this.clock.now();
    const current = await this.sessions.findByRefreshHash(hash);
    if (current) {
      const user = await this.liveUserOf(current, now);
      const next = this.refreshTokens.generate();
      if (await this.sessions.rotate(current.id, hash, this.refreshTokens.hash(next), new Date(now))) {
        const maxAgeSeconds = Math.floor((current.expiresAt.getTime() - now) / 1000);
        return {
          cookie: { refreshToken: next, maxAgeSeconds },
          response: await this.grant(user, current.id),
        };
      }
      // Another refresh with this value replaced it a moment ago (another tab), or a sign-out ended it.
    }
    const retired = await this.sessions.findRetired(hash);
    if (!retired) throw current ? sessionEnded() : unknownSession();
    const { session, retiredAt } = retired;
    if (now - retiredAt.getTime() > REFRESH_REUSE_GRACE_MS) {
      await this.sessions.revoke(session.id, new Date(now));
      this.logger.warn(
        `dashboard session ${session.id} ended: a refresh token it had replaced was presented again`,
      );
      throw sessionEnded();
    }
    const user = await this.liveUserOf(session, now);
    await this.sessions.markUsed(session.id, new Date(now));
    return { response: await this.grant(user, session.id) };
  }

  /**
   * Revokes the session of this refresh token, current or replaced, if any: signing out twice is not an
   * error, and a tab that still sent a replaced value signs the session out too.
   */
  async signOut(refreshToken: string | undefined, client: RequestOrigin): Promise<void> {
    if (!refreshToken) return;
    const hash = this.refreshTokens.hash(refreshToken);
    const session =
      (await this.sessions.findByRefreshHash(hash)) ?? (await this.sessions.findRetired(hash))?.session;
    if (!session) return;
    await this.sessions.transaction(async (manager) => {
      // Recorded by the sign-out that ended the session only: a second one changes nothing.
      if (await this.sessions.revoke(session.id, this.clock.date(), manager))
        await this.recordSession(
          manager,
          'session.signed_out',
          session.organizationId,
          session.userId,
          session.id,
          client,
        );
    });
  }

  /** A session's sign-in or sign-out, its user the actor, in the organization's audit log. */
  private recordSession(
    manager: EntityManager,
    action: 'session.signed_in' | 'session.signed_out',
    organizationId: string,
    userId: string,
    sessionId: string,
    client: RequestOrigin,
  ): Promise<void> {
    return this.audit.append(manager, [
      {
        organizationId,
        action,
        actor: { type: 'user', id: userId },
        origin: client,
        details: { session_id: sessionId },
      },
    ]);
  }

  /** The session's user, if the session lives and the user is active; otherwise the session's end, as 401. */
  private async liveUserOf(session: DashboardSession, now: number): Promise<User> {
    if (sessionEndAt(session, now, this.idleMs)) throw sessionEnded();
    const user = await this.users.findMember(session.organizationId, session.userId);
    if (!user?.active) {
      // Reactivating the user must not bring this session back.
      await this.sessions.revoke(session.id, new Date(now));
      throw unknownSession();
    }
    return user;
  }

  private async grant(user: User, sessionId: string): Promise<DashboardSessionResponse> {
    const permissions = (await this.roles.permissionsOf(user.organizationId, user.role)) ?? new Set();
    return {
      ...this.tokens.issue(user, sessionId),
      user: SessionUserResponse.of(user, permissions),
    };
  }
}

const sessionEnded = (): SessionError =>
  new SessionError(SessionErrorCode.SessionExpired, 'The dashboard session has ended; sign in again.');

const unknownSession = (): SessionError =>
  new SessionError(SessionErrorCode.UnknownSession, 'No dashboard session goes with this request; sign in.');
