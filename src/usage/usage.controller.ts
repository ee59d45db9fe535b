import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { RequirePermissions, RequirePermissionsForQuery } from '../access/route-access.decorators';
import { ApiProblems } from '../common/openapi';
import {
  GrantUsageResponse,
  IdentityUsageResponse,
  KeyUsageQueryDto,
  KeyUsageResponse,
  OrganizationClientUsageResponse,
  OrganizationIdentityUsageResponse,
  OrganizationUsageQueryDto,
  OrganizationUsageResponse,
  OrganizationUsageSeriesResponse,
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

  @Get('identities/:id/usage')
  @RequirePermissions('identities:read')
  @ApiOperation({
    summary: "An identity's requests per hour or day: its keys' usage summed",
    description:
      "As a key's usage, summed over the keys that belonged to the identity, each for the time it did: a key attached later counts from then, one detached or moved to another identity keeps what it did before under this one. Counts are readable within 10 seconds.",
  })
  @ApiOkResponse({ type: IdentityUsageResponse })
  @ApiProblems(400, 404)
  ofIdentity(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Query() query: KeyUsageQueryDto,
  ): Promise<IdentityUsageResponse> {
    return this.usage.ofIdentity(principal, id, query);
  }

  @Get('oauth/grants/:id/usage')
  // Any credential: the grant's own user reads it, `api_keys:read` reads any of the organization's
  // (the rule of GET /v1/oauth/grants); another grant answers 404.
  @RequirePermissions()
  @ApiOperation({
    summary: "An OAuth grant's requests per hour or day, allowed and refused by reason",
    description:
      "As a key's usage (same query, same buckets), for the requests made with the grant's OAuth access tokens. " +
      "Readable by the grant's user, or with `api_keys:read`; another user's grant answers 404. Counts are readable within 10 seconds.",
  })
  @ApiOkResponse({ type: GrantUsageResponse })
  @ApiProblems(400, 404)
  ofGrant(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Query() query: KeyUsageQueryDto,
  ): Promise<GrantUsageResponse> {
    return this.usage.ofGrant(principal, id, query);
  }

  @Get('usage/series')
  @RequirePermissions('api_keys:read')
  @ApiOperation({
    summary: "The organization's requests per hour or day: all its keys' usage summed",
    description:
      "As a key's usage (same query, same buckets), summed over every key of the organization, keys deleted since included: " +
      'for a chart of the whole organization, such as requests, denials and credits by day. `GET /v1/usage` over the same ' +
      'range lists the keys behind these numbers (deleted keys left out). Counts are readable within 10 seconds.',
  })
  @ApiOkResponse({ type: OrganizationUsageSeriesResponse })
  @ApiProblems(400)
  seriesOfOrganization(
    @Principal() principal: Principal,
    @Query() query: KeyUsageQueryDto,
  ): Promise<OrganizationUsageSeriesResponse> {
    return this.usage.seriesOfOrganization(principal, query);
  }

  @Get('usage')
  @RequirePermissions('api_keys:read')
  // Listing identities shows their external_ids, which identities:read guards.
  @RequirePermissionsForQuery('group_by', { identity: ['identities:read'] })
  @ApiOperation({
    summary:
      "The organization's keys (or identities, or OAuth clients) used in a range of hours, most requests first",
    description:
      'Default: the 24 hours that end with the current one. `group_by=identity` lists identities instead of keys ' +
      '(OrganizationIdentityUsageResponse) and needs `identities:read` as well as `api_keys:read`. ' +
      '`group_by=client` lists the OAuth clients whose access tokens were used (OrganizationClientUsageResponse), summed over their grants. ' +
      "Keys and identities never include OAuth tokens' requests.",
  })
  @ApiExtraModels(
    OrganizationUsageResponse,
    OrganizationIdentityUsageResponse,
    OrganizationClientUsageResponse,
  )
  @ApiOkResponse({
    description:
      'Keys (`group_by=key`, the default), identities (`group_by=identity`) or OAuth clients (`group_by=client`).',
    // anyOf, not oneOf: an empty list is both.
    schema: {
      anyOf: [
        { $ref: getSchemaPath(OrganizationUsageResponse) },
        { $ref: getSchemaPath(OrganizationIdentityUsageResponse) },
        { $ref: getSchemaPath(OrganizationClientUsageResponse) },
      ],
    },
  })
  @ApiProblems(400)
  ofOrganization(
    @Principal() principal: Principal,
    @Query() query: OrganizationUsageQueryDto,
  ): Promise<
    OrganizationUsageResponse | OrganizationIdentityUsageResponse | OrganizationClientUsageResponse
  > {
    return this.usage.ofOrganization(principal, query);
  }
}
