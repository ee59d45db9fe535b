import { Module } from '@nestjs/common';
import { OrganizationSecretsController } from './organization-secrets.controller';
import { OrganizationSecretsModule } from './organization-secrets.module';

/** The secrets API (/v1/secrets) over OrganizationSecretsModule. */
@Module({
  imports: [OrganizationSecretsModule],
  controllers: [OrganizationSecretsController],
})
export class OrganizationSecretsHttpModule {}
