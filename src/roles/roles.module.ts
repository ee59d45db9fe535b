import { Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditActions } from '../audit/audit-actions';
import { ROLE_AUDIT_ACTIONS } from './roles.declarations';
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
export class RolesModule implements OnModuleInit {
  constructor(private readonly auditActions: AuditActions) {}

  /** The audit actions it records (roles.declarations.ts). */
  onModuleInit(): void {
    this.auditActions.declare(ROLE_AUDIT_ACTIONS);
  }
}
