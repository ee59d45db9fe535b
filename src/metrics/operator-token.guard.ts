import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { CommonError, CommonErrorCode } from '../common/common.errors';
import { ConfigOf } from '../config/config-namespace';
import { metricsConfig } from '../config/namespaces';
import { MetricsError, MetricsErrorCode } from './metrics.errors';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * Operator routes (GET /metrics) answer the platform's operator, not a tenant: the route is public
 * to the key check and this guard asks for `Authorization: Bearer <METRICS_TOKEN>` instead. Without
 * a token configured the route does not exist (404), so nothing is exposed by default.
 */
@Injectable()
export class OperatorTokenGuard implements CanActivate {
  private readonly expected?: Buffer;

  constructor(@Inject(metricsConfig.KEY) config: ConfigOf<typeof metricsConfig>) {
    this.expected = config.token === undefined ? undefined : digest(config.token);
  }

  canActivate(context: ExecutionContext): boolean {
    if (!this.expected) throw new CommonError(CommonErrorCode.NotFound, 'No route matches this path.');
    const header = context.switchToHttp().getRequest<Request>().headers.authorization ?? '';
    const presented = /^Bearer (\S+)$/i.exec(header)?.[1];
    // Digests of equal length, so the comparison takes the same time whatever was sent.
    if (presented !== undefined && timingSafeEqual(digest(presented), this.expected)) return true;
    throw new MetricsError(
      MetricsErrorCode.InvalidOperatorToken,
      'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>, the operator secret.',
    );
  }
}
