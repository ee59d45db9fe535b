import { Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Organization } from '../accounts/organization.entity';
import { AuditActions } from '../audit/audit-actions';
import { OrganizationSecret } from './organization-secret.entity';
import { ORGANIZATION_SECRET_AUDIT_ACTIONS } from './organization-secrets.declarations';
import { OrganizationSecrets } from './organization-secrets';
import { OrganizationSecretsRepository } from './organization-secrets.repository';
import { OrganizationSecretsService } from './organization-secrets.service';
import { SecretReferences } from './secret-references';
import { SecretSealer } from './secret-sealer';

/**
 * Organization secrets: values the organization's agents send upstream, write-only and sealed at rest.
 * Other modules inject OrganizationSecrets (exists, reveal for a run) and SecretReferences (register a
 * check that a secret is in use, so deleting it is refused); the API is OrganizationSecretsHttpModule.
 */
@Module({
  // Organization too: the table's foreign key names it (TypeORM builds it only within one data source).
  imports: [TypeOrmModule.forFeature([OrganizationSecret, Organization])],
  providers: [
    OrganizationSecretsRepository,
    SecretSealer,
    SecretReferences,
    OrganizationSecrets,
    OrganizationSecretsService,
  ],
  exports: [OrganizationSecrets, SecretReferences, OrganizationSecretsService],
})
export class OrganizationSecretsModule implements OnModuleInit {
  constructor(private readonly auditActions: AuditActions) {}

  /** The audit actions it records (organization-secrets.declarations.ts). */
  onModuleInit(): void {
    this.auditActions.declare(ORGANIZATION_SECRET_AUDIT_ACTIONS);
  }
}
