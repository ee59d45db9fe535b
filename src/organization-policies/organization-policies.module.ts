import { Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditActions } from '../audit/audit-actions';
import { ORGANIZATION_POLICY_AUDIT_ACTIONS } from './organization-policies.declarations';
import { Organization } from '../accounts/organization.entity';
import { OrganizationPoliciesRepository } from './organization-policies.repository';
import { OrganizationPoliciesService } from './organization-policies.service';
import { OrganizationPolicy } from './organization-policy.entity';

/** Organization policies: the rules the api-keys module (above it) enforces on keys. */
@Module({
  // Organization too: organization_policies.organization_id's foreign key names it, and TypeORM builds a
  // foreign key only to an entity of the same data source (this module does not import AccountsModule).
  imports: [TypeOrmModule.forFeature([OrganizationPolicy, Organization])],
  providers: [OrganizationPoliciesRepository, OrganizationPoliciesService],
  exports: [OrganizationPoliciesService],
})
export class OrganizationPoliciesModule implements OnModuleInit {
  constructor(private readonly auditActions: AuditActions) {}

  /** The audit actions it records (organization-policies.declarations.ts). */
  onModuleInit(): void {
    this.auditActions.declare(ORGANIZATION_POLICY_AUDIT_ACTIONS);
  }
}
