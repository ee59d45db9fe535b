import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { mapPage } from '../common/pagination';
import { Operation } from '../access/route-access.decorators';
import { AuditService } from './audit.service';
import {
  AuditChainResponse,
  AuditEntryResponse,
  AuditIntegrityQueryDto,
  AuditPage,
  AuditQueryDto,
} from './dto/audit.dto';

@ApiTags('audit')
@Controller('v1/audit-log')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @Operation(
    'audit:read',
    "The organization's audit log, newest first; filter by action, actor and key_id; `expand` names actors and keys",
    AuditPage,
    400,
  )
  async list(@Principal() principal: Principal, @Query() query: AuditQueryDto): Promise<AuditPage> {
    const page = await this.audit.list(principal.organizationId, query);
    const names = await this.audit.namesOf(principal.organizationId, page.data, query.expand);
    return mapPage(page, (entry) => AuditEntryResponse.of(entry, names));
  }

  @Get('integrity')
  @Operation(
    'audit:read',
    "Verifies the organization's audit chain (keyed links, its recorded head, and a checkpoint when given), reports the first problem, and signs a checkpoint of its end",
    AuditChainResponse,
    400,
  )
  verify(
    @Principal() principal: Principal,
    @Query() query: AuditIntegrityQueryDto,
  ): Promise<AuditChainResponse> {
    return this.audit.verifyChain(principal.organizationId, query.checkpoint);
  }
}
