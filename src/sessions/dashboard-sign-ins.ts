import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AuditService, RequestOrigin } from '../audit/audit.service';
import { AuthService } from '../auth/auth.service';
import type { TokenRequestDto } from '../auth/dto/auth.dto';
import type { User } from '../accounts/user.entity';
import { Clock } from '../common/clock';
import { newId } from '../common/ids';
import { ConfigOf } from '../config/config-namespace';
import { sessionsConfig } from '../config/namespaces';
import { DashboardSessionsRepository } from './dashboard-sessions.repository';
import type { DashboardSessionResponse } from './dto/dashboard-session.dto';
import { RefreshTokens } from './refresh-tokens';
import { SessionCookie, SessionGrants } from './session-grants';
import { DASHBOARD_SESSION_ID } from './sessions.declarations';

export interface StartedSession {
  /** Who signed in (for pages that act for them: the OAuth authorization endpoint's). */
  user: User;
  cookie: SessionCookie;
  response: DashboardSessionResponse;
}

// A User-Agent is the client's to choose: kept for display, bounded.
const MAX_USER_AGENT_LENGTH = 512;

/**
 * A dashboard session's start and end: sign-in (email and password to a new session row and its
 * refresh cookie) and sign-out (the row revoked), the two moments written to the organization's audit
 * log. Apart from SessionRefreshes, which keeps a live session going and needs neither the password
 * check nor the audit log.
 */
@Injectable()
export class DashboardSignIns {
  private readonly absoluteMs: number;

  constructor(
    @Inject(sessionsConfig.KEY) config: ConfigOf<typeof sessionsConfig>,
    private readonly auth: AuthService,
    private readonly sessions: DashboardSessionsRepository,
    private readonly refreshTokens: RefreshTokens,
    private readonly grants: SessionGrants,
    private readonly clock: Clock,
    private readonly audit: AuditService,
  ) {
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
      user,
      cookie: { refreshToken, maxAgeSeconds: this.absoluteMs / 1000 },
      response: await this.grants.grant(user, id),
    };
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
}
