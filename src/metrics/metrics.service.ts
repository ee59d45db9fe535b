import { Injectable } from '@nestjs/common';
import type { RequestCompletionListener } from '../common/request-context';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { RequestMetrics } from './request-metrics';

/**
 * Prometheus metrics. Each application instance owns its registry (not prom-client's global one), so
 * several instances in one process, as the tests boot them, do not collide.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly requests = new RequestMetrics();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    this.requests.registerWith(this.registry);
  }

  /** Counts an answered request; labels by route pattern (`/v1/users/:id`), never by raw URL, to bound cardinality. */
  readonly recordRequest: RequestCompletionListener = (req, res, seconds) => {
    const route = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
    this.requests.record(req.method, route, res.statusCode, seconds);
  };
}
