import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Public } from '../access/route-access.decorators';
import { packageVersion } from '../common/package-version';
import { DASHBOARD_ROOT } from '../dashboard-files/dashboard-serving';
import { ServiceIndex } from './dto/service-index.dto';

/**
 * `GET /`: what a person (or a script) finds at the server's address, instead of a bare 404: what this
 * is, its version, and where the API, the dashboard, the OpenAPI document and readiness are. Public, like
 * the health routes: it names nothing of any organization.
 */
@ApiTags('operations')
@Controller()
export class ServiceIndexController {
  @Get()
  @Public()
  @ApiOperation({ summary: "The server's index: its version and where the API, dashboard and document are" })
  @ApiOkResponse({ type: ServiceIndex })
  get(): ServiceIndex {
    return {
      name: 'Gatehouse',
      version: packageVersion(),
      api: '/v1',
      dashboard: `${DASHBOARD_ROOT}/`,
      openapi: '/openapi.json',
      health: '/health/ready',
    };
  }
}
