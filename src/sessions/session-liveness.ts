import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { ConfigOf } from '../config/config-namespace';
import { sessionsConfig } from '../config/namespaces';
import { DashboardSessionsRepository } from './dashboard-sessions.repository';
import { sessionEndAt } from './session-lifetime';

/**
 * For the key check: whether the dashboard session an access token names (its `sid`) still lives.
 * One primary-key read per request, like the read of the token's user beside it, so a sign-out on any
 * instance ends the session's tokens at the next request, with no cache to invalidate.
 */
@Injectable()
export class SessionLiveness {
  private readonly idleMs: number;

  constructor(
    @Inject(sessionsConfig.KEY) config: ConfigOf<typeof sessionsConfig>,
    private readonly sessions: DashboardSessionsRepository,
    private readonly clock: Clock,
  ) {
    this.idleMs = config.idleMinutes * 60_000;
  }

  async isLive(sessionId: string, userId: string): Promise<boolean> {
    const session = await this.sessions.findById(sessionId);
    return (
      session !== null &&
      session.userId === userId &&
      sessionEndAt(session, this.clock.now(), this.idleMs) === undefined
    );
  }
}
