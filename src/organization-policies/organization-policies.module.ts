import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import './organization-policies.declarations';
import { OrganizationPoliciesRepository } from './organization-policies.repository';
import { OrganizationPoliciesService } from './organization-policies.service';
import { OrganizationPolicy } from './organization-policy.entity';

/** Organization policies: the rules the api-keys module (above it) enforces on keys. */
@Module({
  imports: [TypeOrmModule.forFeature([OrganizationPolicy])],
  providers: [OrganizationPoliciesRepository, OrganizationPoliciesService],
  exports: [OrganizationPoliciesService],
})
export class OrganizationPoliciesModule {}
