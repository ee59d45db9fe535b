import { Inject, Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import type { User } from '../accounts/user.entity';
import { UsersService } from '../accounts/users.service';
import { Clock } from '../common/clock';
import { ConfigOf } from '../config/config-namespace';
import { sessionsConfig } from '../config/namespaces';
import { DashboardSessionsRepository } from './dashboard-sessions.repository';
import { RefreshTokens } from './refresh-tokens';
import { readSessionCookie } from './session-cookie';
import { sessionEndAt } from './session-lifetime';

/**
 * Who is signed in to the dashboard on the browser that sent a request, for pages outside the dashboard
 * that act for that user (the OAuth authorization endpoint's sign-in and consent). The cookie must name
 * the live, current session of an active user. It only reads: the cookie is not rotated and the idle
 * time does not restart (the dashboard's refresh does both), so asking never races the dashboard's tabs.
 */
@Injectable()
export class BrowserSessions {
  private readonly idleMs: number;

  constructor(
    @Inject(sessionsConfig.KEY) config: ConfigOf<typeof sessionsConfig>,
    private readonly sessions: DashboardSessionsRepository,
    private readonly refreshTokens: RefreshTokens,
    private readonly users: UsersService,
    private readonly clock: Clock,
  ) {
    this.idleMs = config.idleMinutes * 60_000;
  }

  async userOf(request: Pick<IncomingMessage, 'headers'>): Promise<User | undefined> {
    const cookie = readSessionCookie(request);
    if (!cookie) return undefined;
    // The current value only: a refresh sets both copies of the cookie (session-cookie.ts) together.
    const session = await this.sessions.findByRefreshHash(this.refreshTokens.hash(cookie));
    if (!session || sessionEndAt(session, this.clock.now(), this.idleMs) !== undefined) return undefined;
    const user = await this.users.findMember(session.organizationId, session.userId);
    return user?.active ? user : undefined;
  }
}
