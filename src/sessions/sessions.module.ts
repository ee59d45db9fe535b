import { Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditActions } from '../audit/audit-actions';
import { SESSION_AUDIT_ACTIONS } from './sessions.declarations';
import { AccountsModule } from '../accounts/accounts.module';
import { AuthModule } from '../auth/auth.module';
import { RolesModule } from '../roles/roles.module';
import { DashboardSession } from './dashboard-session.entity';
import { DashboardSessionsController } from './dashboard-sessions.controller';
import { DashboardSessionsRepository } from './dashboard-sessions.repository';
import { DashboardSignIns } from './dashboard-sign-ins';
import { RefreshTokens } from './refresh-tokens';
import { RetiredRefreshToken } from './retired-refresh-token.entity';
import { SessionGrants } from './session-grants';
import { SessionRefreshes } from './session-refreshes';
import { SessionLiveness } from './session-liveness';
import { BrowserSessions } from './browser-sessions';

/**
 * Dashboard sessions (POST/DELETE /v1/auth/session, POST /v1/auth/session/refresh). SessionLiveness is
 * exported for the key check, which refuses the access tokens of an ended session; BrowserSessions and
 * DashboardSignIns for the OAuth authorization pages, which sign in with the same session.
 */
@Module({
  imports: [
    TypeOrmModule.forFeature([DashboardSession, RetiredRefreshToken]),
    AuthModule,
    AccountsModule,
    RolesModule,
  ],
  controllers: [DashboardSessionsController],
  providers: [
    DashboardSignIns,
    SessionRefreshes,
    SessionGrants,
    DashboardSessionsRepository,
    RefreshTokens,
    SessionLiveness,
    BrowserSessions,
  ],
  exports: [SessionLiveness, BrowserSessions, DashboardSignIns],
})
export class SessionsModule implements OnModuleInit {
  constructor(private readonly auditActions: AuditActions) {}

  /** The audit actions it records (sessions.declarations.ts). */
  onModuleInit(): void {
    this.auditActions.declare(SESSION_AUDIT_ACTIONS);
  }
}
