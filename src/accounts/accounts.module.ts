import { Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditActions } from '../audit/audit-actions';
import { RolesModule } from '../roles/roles.module';
import { BootstrapAdmin } from './bootstrap-admin';
import { Organization } from './organization.entity';
import { OrganizationsRepository } from './organizations.repository';
import { OrganizationsService } from './organizations.service';
import { PasswordHasher } from './password-hasher';
import { Team, TeamMember } from './team.entity';
import { TeamsController } from './teams.controller';
import { TeamsRepository } from './teams.repository';
import { TeamsService } from './teams.service';
import { UserLifecycle } from './user-lifecycle';
import { User } from './user.entity';
import { UsersController } from './users.controller';
import { UsersRepository } from './users.repository';
import { UsersService } from './users.service';
// Last: the TypeScript compiler numbers the string literals it meets in the order it reads files, and the
// OpenAPI document lists a union's members in that order; read first, this file's 'team' would put
// `team` before `personal` in a key's `type`.
import { ACCOUNT_AUDIT_ACTIONS } from './accounts.declarations';

/** Organizations, users and teams. */
@Module({
  imports: [TypeOrmModule.forFeature([Organization, User, Team, TeamMember]), RolesModule],
  controllers: [UsersController, TeamsController],
  providers: [
    UsersRepository,
    TeamsRepository,
    OrganizationsRepository,
    UsersService,
    TeamsService,
    OrganizationsService,
    PasswordHasher,
    UserLifecycle,
    BootstrapAdmin,
  ],
  exports: [UsersService, TeamsService, OrganizationsService, PasswordHasher, UserLifecycle],
})
export class AccountsModule implements OnModuleInit {
  constructor(private readonly auditActions: AuditActions) {}

  /** The audit actions it records (accounts.declarations.ts). */
  onModuleInit(): void {
    this.auditActions.declare(ACCOUNT_AUDIT_ACTIONS);
  }
}
