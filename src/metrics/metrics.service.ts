import { Injectable } from '@nestjs/common';
import type { RequestCompletionListener } from '../common/request-context';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/**
 * Prometheus metrics. Each application instance owns its registry (not prom-client's global one), so
 * several instances in one process, as the tests boot them, do not collide.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency in seconds, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Counts an answered request; labels by route pattern (`/v1/users/:id`), never by raw URL, to bound cardinality. */
  readonly recordRequest: RequestCompletionListener = (req, res, seconds) => {
    const route = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
    const labels = { method: req.method, route, status: String(res.statusCode) };
    this.requests.inc(labels);
    this.latency.observe(labels, seconds);
  };
}
