import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiTags } from '@nestjs/swagger';
import { AuditService, RequestOrigin } from '../audit/audit.service';
import { AuditEntryResponse, AuditPage, KeyAuditQueryDto } from '../audit/dto/audit.dto';
import { Origin } from '../audit/request-origin.decorator';
import { Principal } from '../access/principal';
import { ReturnsSecret } from '../common/returns-secret.decorator';
import { mapPage } from '../common/pagination';
import { ConfigOf } from '../config/config-namespace';
import { accessConfig, rateLimitsConfig } from '../config/namespaces';
import { Created, NoContent, Operation } from '../access/route-access.decorators';
import { ApiKeyLifecycleService } from './api-key-lifecycle.service';
import { ApiKeyQueryService } from './api-key-query.service';
import { ApiKeyRotationService } from './api-key-rotation.service';
import { CreateApiKeyDto, ListApiKeysQueryDto, RotateApiKeyDto, UpdateApiKeyDto } from './dto/api-key.dto';
import {
  ApiKeyDefaultsResponse,
  ApiKeyPage,
  ApiKeyResponse,
  CreatedApiKeyResponse,
} from './dto/api-key-response.dto';

@ApiTags('api-keys')
@Controller('v1/api-keys')
export class ApiKeysController {
  constructor(
    private readonly lifecycle: ApiKeyLifecycleService,
    private readonly queries: ApiKeyQueryService,
    private readonly rotation: ApiKeyRotationService,
    private readonly audit: AuditService,
    @Inject(rateLimitsConfig.KEY) private readonly rateLimits: ConfigOf<typeof rateLimitsConfig>,
    @Inject(accessConfig.KEY) private readonly access: ConfigOf<typeof accessConfig>,
  ) {}

  @Post()
  @Operation(
    'api_keys:create',
    'Create a key; its value is in this response only',
    Created(CreatedApiKeyResponse),
    400,
  )
  @ReturnsSecret()
  create(
    @Principal() principal: Principal,
    @Body() dto: CreateApiKeyDto,
    @Origin() origin: RequestOrigin,
  ): Promise<CreatedApiKeyResponse> {
    return this.lifecycle.create(principal, dto, origin);
  }

  @Get()
  @Operation('api_keys:read', "List the organization's keys, newest first", ApiKeyPage, 400)
  list(@Principal() principal: Principal, @Query() query: ListApiKeysQueryDto): Promise<ApiKeyPage> {
    return this.queries.list(principal, query);
  }

  // Declared before `:id`, so this path is not read as a key id (key ids start with `key_`).
  @Get('defaults')
  @Operation(
    'api_keys:read',
    'The limits a key gets when it sets none of its own (its rate_limit fields are null)',
    ApiKeyDefaultsResponse,
  )
  defaults(): ApiKeyDefaultsResponse {
    return {
      rate_limit: {
        requests_per_minute: this.rateLimits.defaultPerMinute,
        requests_per_hour: this.rateLimits.defaultPerHour,
      },
      max_concurrent_requests: this.access.maxConcurrentRequestsPerKey,
    };
  }

  @Get(':id')
  @Operation('api_keys:read', 'Get a key, with its role and effective permissions', ApiKeyResponse, 404)
  get(@Principal() principal: Principal, @Param('id') id: string): Promise<ApiKeyResponse> {
    return this.queries.get(principal, id);
  }

  @Patch(':id')
  @Operation('api_keys:update', 'Change any setting but the type', ApiKeyResponse, 400, 404, 409)
  update(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateApiKeyDto,
    @Origin() origin: RequestOrigin,
  ): Promise<ApiKeyResponse> {
    return this.lifecycle.update(principal, id, dto, origin);
  }

  @Post(':id/rotate')
  @HttpCode(200)
  @Operation(
    'api_keys:update',
    'Issue a new value; the old one works until the grace period ends',
    CreatedApiKeyResponse,
    400,
    404,
    409,
  )
  // Every field has a default (no grace period): a rotation needs no body at all.
  @ApiBody({ type: RotateApiKeyDto, required: false })
  @ReturnsSecret()
  rotate(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: RotateApiKeyDto,
    @Origin() origin: RequestOrigin,
  ): Promise<CreatedApiKeyResponse> {
    return this.rotation.rotate(principal, id, dto, origin);
  }

  @Delete(':id')
  @HttpCode(204)
  @Operation('api_keys:delete', 'Delete a key: refused at once, and gone (404) from then on', NoContent, 404)
  async delete(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Origin() origin: RequestOrigin,
  ): Promise<void> {
    await this.lifecycle.delete(principal, id, origin);
  }

  @Get(':id/audit-log')
  @Operation(
    'api_keys:read',
    "The key's audit log, newest first, optionally of some actions; `expand` names actors",
    AuditPage,
    400,
    404,
  )
  async auditLog(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Query() query: KeyAuditQueryDto,
  ): Promise<AuditPage> {
    const key = await this.queries.find(principal, id);
    const page = await this.audit.list(principal.organizationId, query, key.id);
    const names = await this.audit.namesOf(principal.organizationId, page.data, query.expand);
    return mapPage(page, (entry) => AuditEntryResponse.of(entry, names));
  }
}
