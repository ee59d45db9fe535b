import { Controller, Get, Inject, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckResult,
  HealthCheckService,
  HealthIndicatorResult,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import { Public } from '../access/route-access.decorators';
import { ApiProblems } from '../common/openapi';
import { ConfigOf } from '../config/config-namespace';
import { rateLimitsConfig } from '../config/namespaces';
import { DatabaseError, DatabaseErrorCode } from '../database/database.errors';
import { RedisConnection } from '../redis/redis.connection';
import { LiveResponse, ReadyResponse } from './dto/health.dto';
import { HealthError, HealthErrorCode } from './health.errors';
import { ShutdownDrain } from '../common/shutdown-drain';

@ApiTags('operations')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly redis: RedisConnection,
    @Inject(rateLimitsConfig.KEY) private readonly rateLimits: ConfigOf<typeof rateLimitsConfig>,
    private readonly drain: ShutdownDrain,
  ) {}

  @Get('live')
  @Public()
  @ApiOperation({ summary: 'Liveness: the process answers' })
  @ApiOkResponse({ type: LiveResponse })
  live(): LiveResponse {
    return { status: 'ok' };
  }

  @Get('ready')
  @Public()
  @HealthCheck({ swaggerDocumentation: false })
  @ApiOperation({
    summary: 'Readiness: the database (and Redis, when configured) answer',
    description:
      'With Redis unreachable and RATE_LIMIT_FAILURE_MODE=open every request is still served, so the instance stays ready (200) and reports Redis as `degraded`; in closed mode it is not ready (503). From a SIGTERM until the port closes (SHUTDOWN_DRAIN_MS) it is not ready either (503, `shutting_down`), while it still serves.',
  })
  @ApiOkResponse({ type: ReadyResponse })
  @ApiProblems(503)
  async ready(): Promise<HealthCheckResult> {
    if (this.drain.draining) {
      throw new HealthError(
        HealthErrorCode.ShuttingDown,
        'The instance is shutting down: send requests elsewhere.',
      );
    }
    const checks = [() => this.database.pingCheck('database', { timeout: 2000 })];
    if (this.redis.client) checks.push(() => this.redisCheck());
    try {
      return markDegraded(await this.health.check(checks));
    } catch (error) {
      throw error instanceof ServiceUnavailableException ? notReady(error.getResponse()) : error;
    }
  }

  /**
   * Redis down is fatal only in closed mode, where requests answer 503 without it. In open mode the
   * instance serves every request (limits per instance), and a load balancer that drained it would
   * drain every instance at once: it passes, marked degraded.
   */
  private async redisCheck(): Promise<HealthIndicatorResult> {
    const indicator = this.indicators.check('redis');
    try {
      await this.redis.ping();
      return indicator.up();
    } catch (error) {
      const message = (error as Error).message;
      if (this.rateLimits.failureMode === 'open') return indicator.up({ [DEGRADED]: true, message });
      return indicator.down({ message });
    }
  }
}

const DEGRADED = 'degraded';

/** Terminus knows only up and down: a passing check flagged degraded is reported as `status: degraded`. */
function markDegraded(result: HealthCheckResult): HealthCheckResult {
  for (const section of [result.info, result.details]) {
    if (!section) continue;
    for (const [name, entry] of Object.entries(section)) {
      if (entry?.[DEGRADED] !== true) continue;
      const { [DEGRADED]: _flag, ...rest } = entry as Record<string, unknown>;
      // The status vocabulary is terminus's; "degraded" is ours, hence the cast.
      section[name] = { ...rest, status: DEGRADED as 'up' };
    }
  }
  return result;
}

/** A failed readiness check as the problem its first failing dependency means, with every check's report. */
function notReady(response: string | object): DatabaseError | HealthError {
  const checks = (response as Partial<HealthCheckResult>).details ?? {};
  const options = { extensions: { checks } };
  if (checks.database?.status !== 'up') {
    return new DatabaseError(DatabaseErrorCode.DatabaseUnavailable, 'The database is unreachable.', options);
  }
  return new HealthError(
    HealthErrorCode.RedisUnavailable,
    'Redis is unreachable and RATE_LIMIT_FAILURE_MODE=closed: requests are refused until it is back.',
    options,
  );
}
