import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { Public } from '../access/route-access.decorators';
import { ApiProblems, OPERATOR_SCHEME } from '../common/openapi';
import { MetricsService } from './metrics.service';
import { OperatorTokenGuard } from './operator-token.guard';

@ApiTags('operations')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  /**
   * For the platform's operator, not an organization: public to the key check (no tenant credential
   * reads the platform's counters), guarded by the METRICS_TOKEN bearer secret instead.
   */
  @Get()
  @Public()
  @UseGuards(OperatorTokenGuard)
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  @ApiOperation({
    summary: 'Prometheus metrics: requests by route and status, key checks by outcome',
    description:
      'Needs `Authorization: Bearer <METRICS_TOKEN>`; without METRICS_TOKEN set the route is off (404).',
  })
  @ApiSecurity(OPERATOR_SCHEME)
  @ApiProduces('text/plain')
  @ApiOkResponse({ schema: { type: 'string' } })
  @ApiProblems(401, 404)
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
