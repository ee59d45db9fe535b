import { Body, Controller, Get, Patch } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { Operation } from '../access/route-access.decorators';
import type { RequestOrigin } from '../audit/audit.service';
import { Origin } from '../audit/request-origin.decorator';
import { OrganizationPoliciesResponse, UpdateOrganizationPoliciesDto } from './dto/organization-policies.dto';
import { OrganizationPoliciesService } from './organization-policies.service';

@ApiTags('organization')
@Controller('v1/organization/policies')
export class OrganizationPoliciesController {
  constructor(private readonly policies: OrganizationPoliciesService) {}

  @Get()
  @Operation(
    'organization:read',
    "The organization's key policies: leak response and key lifetimes",
    OrganizationPoliciesResponse,
  )
  get(@Principal() principal: Principal): Promise<OrganizationPoliciesResponse> {
    return this.policies.get(principal);
  }

  // Existing keys are left as they are; GET /v1/api-keys?violates_policy=true lists those that break it.
  @Patch()
  @Operation(
    'organization:update',
    "Change the organization's key policies (fields left out stay as they are)",
    OrganizationPoliciesResponse,
    400,
  )
  update(
    @Principal() principal: Principal,
    @Body() dto: UpdateOrganizationPoliciesDto,
    @Origin() origin: RequestOrigin,
  ): Promise<OrganizationPoliciesResponse> {
    return this.policies.update(principal, dto, origin);
  }
}
