import { Module } from '@nestjs/common';
import { OrganizationPoliciesController } from './organization-policies.controller';
import { OrganizationPoliciesModule } from './organization-policies.module';

/** GET|PATCH /v1/organization/policies over OrganizationPoliciesModule. */
@Module({
  imports: [OrganizationPoliciesModule],
  controllers: [OrganizationPoliciesController],
})
export class OrganizationPoliciesHttpModule {}
