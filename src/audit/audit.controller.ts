import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { ApiProblems } from '../common/openapi';
import { mapPage } from '../common/pagination';
import { RequirePermissions } from '../access/route-access.decorators';
import { AuditService } from './audit.service';
import { AuditChainResponse, AuditEntryResponse, AuditPage, AuditQueryDto } from './dto/audit.dto';

@ApiTags('audit')
@Controller('v1/audit-log')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @RequirePermissions('audit:read')
  @ApiOperation({ summary: "The organization's audit log, newest first; filter by action and key_id" })
  @ApiOkResponse({ type: AuditPage })
  @ApiProblems(400)
  async list(@Principal() principal: Principal, @Query() query: AuditQueryDto): Promise<AuditPage> {
    return mapPage(await this.audit.list(principal.organizationId, query), AuditEntryResponse.of);
  }

  @Get('integrity')
  @RequirePermissions('audit:read')
  @ApiOperation({
    summary: "Recomputes the organization's audit hash chain and reports the first broken entry",
  })
  @ApiOkResponse({ type: AuditChainResponse })
  verify(@Principal() principal: Principal): Promise<AuditChainResponse> {
    return this.audit.verifyChain(principal.organizationId);
  }
}
