import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
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
export class AccountsModule {}
