import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { Created, NoContent, Operation } from '../access/route-access.decorators';
import type { RequestOrigin } from '../audit/audit.service';
import { Origin } from '../audit/request-origin.decorator';
import { ListQueryDto } from '../common/pagination';
import {
  CreateOrganizationSecretDto,
  OrganizationSecretPage,
  OrganizationSecretResponse,
  UpdateOrganizationSecretDto,
} from './dto/organization-secret.dto';
import { OrganizationSecretsService } from './organization-secrets.service';

@ApiTags('secrets')
@Controller('v1/secrets')
export class OrganizationSecretsController {
  constructor(private readonly secrets: OrganizationSecretsService) {}

  @Post()
  @Operation(
    'secrets:create',
    'Store a secret for agents to send upstream (write-only: its value is never shown again)',
    Created(OrganizationSecretResponse),
    400,
    409,
  )
  create(
    @Principal() principal: Principal,
    @Body() dto: CreateOrganizationSecretDto,
    @Origin() origin: RequestOrigin,
  ): Promise<OrganizationSecretResponse> {
    return this.secrets.create(principal, dto, origin);
  }

  @Get()
  @Operation('secrets:read', "List the organization's secrets, newest first", OrganizationSecretPage, 400)
  list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<OrganizationSecretPage> {
    return this.secrets.list(principal, query);
  }

  @Get(':id')
  @Operation(
    'secrets:read',
    'Get a secret (its name and last four characters, never its value)',
    OrganizationSecretResponse,
    404,
  )
  get(@Principal() principal: Principal, @Param('id') id: string): Promise<OrganizationSecretResponse> {
    return this.secrets.get(principal, id);
  }

  @Patch(':id')
  @Operation(
    'secrets:update',
    'Rename a secret or replace its value',
    OrganizationSecretResponse,
    400,
    404,
    409,
  )
  update(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateOrganizationSecretDto,
    @Origin() origin: RequestOrigin,
  ): Promise<OrganizationSecretResponse> {
    return this.secrets.update(principal, id, dto, origin);
  }

  @Delete(':id')
  @HttpCode(204)
  @Operation('secrets:delete', 'Delete a secret that no agent names', NoContent, 404, 409)
  async delete(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Origin() origin: RequestOrigin,
  ): Promise<void> {
    await this.secrets.delete(principal, id, origin);
  }
}
