import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { RequirePermissions } from '../access/route-access.decorators';
import { ApiProblems } from '../common/openapi';
import {
  KeyUsageQueryDto,
  KeyUsageResponse,
  OrganizationUsageResponse,
  UsageRangeQueryDto,
} from './dto/usage.dto';
import { UsageService } from './usage.service';

@ApiTags('usage')
@Controller('v1')
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  @Get('api-keys/:id/usage')
  @RequirePermissions('api_keys:read')
  @ApiOperation({
    summary: "A key's requests per hour or day, allowed and refused by reason",
    description:
      'One entry per bucket of the range, oldest first, zeros where the key made no request. Default: the 24 buckets that end with the current one. Counts are readable within 10 seconds.',
  })
  @ApiOkResponse({ type: KeyUsageResponse })
  @ApiProblems(400, 404)
  ofKey(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Query() query: KeyUsageQueryDto,
  ): Promise<KeyUsageResponse> {
    return this.usage.ofKey(principal, id, query);
  }

  @Get('usage')
  @RequirePermissions('api_keys:read')
  @ApiOperation({
    summary: "The organization's keys used in a range of hours, most requests first",
    description: 'Default: the 24 hours that end with the current one.',
  })
  @ApiOkResponse({ type: OrganizationUsageResponse })
  @ApiProblems(400)
  ofOrganization(
    @Principal() principal: Principal,
    @Query() query: UsageRangeQueryDto,
  ): Promise<OrganizationUsageResponse> {
    return this.usage.ofOrganization(principal, query);
  }
}
