import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { Created, NoContent, Operation } from '../access/route-access.decorators';
import type { RequestOrigin } from '../audit/audit.service';
import { Origin } from '../audit/request-origin.decorator';
import {
  CreateIdentityDto,
  IdentityPage,
  IdentityResponse,
  ListIdentitiesQueryDto,
  UpdateIdentityDto,
} from './dto/identity.dto';
import { IdentitiesService } from './identities.service';

@ApiTags('identities')
@Controller('v1/identities')
export class IdentitiesController {
  constructor(private readonly identities: IdentitiesService) {}

  @Post()
  @Operation(
    'identities:create',
    'Create an identity: the customer behind keys, by your own external_id',
    Created(IdentityResponse),
    400,
    409,
  )
  create(
    @Principal() principal: Principal,
    @Body() dto: CreateIdentityDto,
    @Origin() origin: RequestOrigin,
  ): Promise<IdentityResponse> {
    return this.identities.create(principal, dto, origin);
  }

  @Get()
  @Operation('identities:read', "List the organization's identities, newest first", IdentityPage, 400)
  list(@Principal() principal: Principal, @Query() query: ListIdentitiesQueryDto): Promise<IdentityPage> {
    return this.identities.list(principal, query);
  }

  @Get(':id')
  @Operation('identities:read', 'Get an identity', IdentityResponse, 404)
  get(@Principal() principal: Principal, @Param('id') id: string): Promise<IdentityResponse> {
    return this.identities.get(principal, id);
  }

  @Patch(':id')
  @Operation(
    'identities:update',
    "Change an identity's external_id, meta, rate limit or credits",
    IdentityResponse,
    400,
    404,
    409,
  )
  update(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateIdentityDto,
    @Origin() origin: RequestOrigin,
  ): Promise<IdentityResponse> {
    return this.identities.update(principal, id, dto, origin);
  }

  @Delete(':id')
  @HttpCode(204)
  @Operation('identities:delete', 'Delete an identity that no key names any more', NoContent, 404, 409)
  async delete(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Origin() origin: RequestOrigin,
  ): Promise<void> {
    await this.identities.delete(principal, id, origin);
  }
}
