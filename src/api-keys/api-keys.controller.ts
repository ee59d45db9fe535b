import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { AuditService, RequestOrigin } from '../audit/audit.service';
import { AuditEntryResponse, AuditPage } from '../audit/dto/audit.dto';
import { Origin } from '../audit/request-origin.decorator';
import { Principal } from '../access/principal';
import { ApiProblems } from '../common/openapi';
import { ReturnsSecret } from '../common/returns-secret.decorator';
import { ListQueryDto, mapPage } from '../common/pagination';
import { RequirePermissions } from '../access/route-access.decorators';
import { ApiKeysService } from './api-keys.service';
import { CreateApiKeyDto, ListApiKeysQueryDto, RotateApiKeyDto, UpdateApiKeyDto } from './dto/api-key.dto';
import { ApiKeyPage, ApiKeyResponse, CreatedApiKeyResponse } from './dto/api-key-response.dto';

@ApiTags('api-keys')
@Controller('v1/api-keys')
export class ApiKeysController {
  constructor(
    private readonly keys: ApiKeysService,
    private readonly audit: AuditService,
  ) {}

  @Post()
  @RequirePermissions('api_keys:create')
  @ReturnsSecret()
  @ApiOperation({ summary: 'Create a key; its value is in this response only' })
  @ApiCreatedResponse({ type: CreatedApiKeyResponse })
  @ApiProblems(400)
  create(
    @Principal() principal: Principal,
    @Body() dto: CreateApiKeyDto,
    @Origin() origin: RequestOrigin,
  ): Promise<CreatedApiKeyResponse> {
    return this.keys.create(principal, dto, origin);
  }

  @Get()
  @RequirePermissions('api_keys:read')
  @ApiOperation({ summary: "List the organization's keys, newest first" })
  @ApiOkResponse({ type: ApiKeyPage })
  @ApiProblems(400)
  list(@Principal() principal: Principal, @Query() query: ListApiKeysQueryDto): Promise<ApiKeyPage> {
    return this.keys.list(principal, query);
  }

  @Get(':id')
  @RequirePermissions('api_keys:read')
  @ApiOperation({ summary: 'Get a key, with its role and effective permissions' })
  @ApiOkResponse({ type: ApiKeyResponse })
  @ApiProblems(404)
  get(@Principal() principal: Principal, @Param('id') id: string): Promise<ApiKeyResponse> {
    return this.keys.get(principal, id);
  }

  @Patch(':id')
  @RequirePermissions('api_keys:update')
  @ApiOperation({ summary: 'Change any setting but the type' })
  @ApiOkResponse({ type: ApiKeyResponse })
  @ApiProblems(400, 404, 409)
  update(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateApiKeyDto,
    @Origin() origin: RequestOrigin,
  ): Promise<ApiKeyResponse> {
    return this.keys.update(principal, id, dto, origin);
  }

  @Post(':id/rotate')
  @HttpCode(200)
  @RequirePermissions('api_keys:update')
  @ReturnsSecret()
  @ApiOperation({ summary: 'Issue a new value; the old one works until the grace period ends' })
  @ApiOkResponse({ type: CreatedApiKeyResponse })
  @ApiProblems(400, 404, 409)
  rotate(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: RotateApiKeyDto,
    @Origin() origin: RequestOrigin,
  ): Promise<CreatedApiKeyResponse> {
    return this.keys.rotate(principal, id, dto, origin);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequirePermissions('api_keys:delete')
  @ApiOperation({ summary: 'Delete a key: refused at once, and gone (404) from then on' })
  @ApiNoContentResponse()
  @ApiProblems(404)
  async delete(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Origin() origin: RequestOrigin,
  ): Promise<void> {
    await this.keys.delete(principal, id, origin);
  }

  @Get(':id/audit-log')
  @RequirePermissions('api_keys:read')
  @ApiOperation({ summary: "The key's audit log, newest first" })
  @ApiOkResponse({ type: AuditPage })
  @ApiProblems(400, 404)
  async auditLog(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Query() query: ListQueryDto,
  ): Promise<AuditPage> {
    const key = await this.keys.find(principal, id);
    return mapPage(await this.audit.list(principal.organizationId, query, key.id), AuditEntryResponse.of);
  }
}
