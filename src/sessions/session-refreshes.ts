import { Inject, Injectable, Logger } from '@nestjs/common';
import type { User } from '../accounts/user.entity';
import { UsersService } from '../accounts/users.service';
import { Clock } from '../common/clock';
import { ConfigOf } from '../config/config-namespace';
import { sessionsConfig } from '../config/namespaces';
import type { DashboardSession } from './dashboard-session.entity';
import { DashboardSessionsRepository } from './dashboard-sessions.repository';
import type { DashboardSessionResponse } from './dto/dashboard-session.dto';
import { RefreshTokens } from './refresh-tokens';
import { SessionCookie, SessionGrants } from './session-grants';
import { sessionEndAt } from './session-lifetime';
import { SessionError, SessionErrorCode } from './sessions.errors';

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

/**
 * Dashboard sessions: an httpOnly, SameSite=Strict refresh cookie that yields short-lived access
 * tokens, which the page holds in memory only. No credential is ever readable by page scripts; a
 * reload costs one refresh; sign-out revokes the row, and the key check refuses the session's access
 * tokens from then on (each carries the session id as `sid`). Every refresh rotates the cookie's value;
 * a replaced value presented again past REFRESH_REUSE_GRACE_MS means someone else holds the session
 * (a copied cookie), so the whole session ends, as at sign-out.
 *
 * This is the refresh: keeping a live session going, and ending one whose cookie was copied. Apart from
 * DashboardSignIns (the session's start and end), which checks passwords and writes the audit log.
 */
@Injectable()
export class SessionRefreshes {
  private readonly logger = new Logger('DashboardSessions');
  private readonly idleMs: number;

  constructor(
    @Inject(sessionsConfig.KEY) config: ConfigOf<typeof sessionsConfig>,
    private readonly users: UsersService,
    private readonly sessions: DashboardSessionsRepository,
    private readonly refreshTokens: RefreshTokens,
    private readonly grants: SessionGrants,
    private readonly clock: Clock,
  ) {
    this.idleMs = config.idleMinutes * 60_000;
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
          response: await this.grants.grant(user, current.id),
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
    return { response: await this.grants.grant(user, session.id) };
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
}

const sessionEnded = (): SessionError =>
  new SessionError(SessionErrorCode.SessionExpired, 'The dashboard session has ended; sign in again.');

const unknownSession = (): SessionError =>
  new SessionError(SessionErrorCode.UnknownSession, 'No dashboard session goes with this request; sign in.');
