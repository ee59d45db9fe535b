import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CustomRole } from './custom-role.entity';
import { PermissionsController } from './permissions.controller';
import { RolesController } from './roles.controller';
import { RoleHolders } from './role-holders';
import { RolesRepository } from './roles.repository';
import { RolesService } from './roles.service';

/** Built-in and custom roles, and the permission catalogue they are written in. */
@Module({
  imports: [TypeOrmModule.forFeature([CustomRole])],
  controllers: [RolesController, PermissionsController],
  providers: [RolesRepository, RolesService, RoleHolders],
  exports: [RolesService, RoleHolders],
})
export class RolesModule {}
