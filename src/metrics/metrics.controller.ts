import { Controller, Get, Header } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { ApiProblems } from '../common/openapi';
import { RequirePermissions } from '../access/route-access.decorators';
import { MetricsService } from './metrics.service';

@ApiTags('operations')
@ApiBearerAuth()
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  /** Not public (the contract lists only health and docs as public): scrape with a credential holding audit:read. */
  @Get()
  @RequirePermissions('audit:read')
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  @ApiOperation({ summary: 'Prometheus metrics: request counts and latency by route and status' })
  @ApiProduces('text/plain')
  @ApiOkResponse({ schema: { type: 'string' } })
  @ApiProblems(401, 403)
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
