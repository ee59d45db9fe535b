import { Injectable } from '@nestjs/common';
import type { RequestCompletionListener } from '../common/request-context';
import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import { RequestMetrics } from './request-metrics';

/**
 * Prometheus metrics. Each application instance owns its registry (not prom-client's global one), so
 * several instances in one process, as the tests boot them, do not collide.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly requests = new RequestMetrics(this.registry);

  private readonly keyChecks = new Counter({
    name: 'gatehouse_key_checks_total',
    help: 'Key checks of requests to protected routes, by outcome: allowed, or the refusal code.',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  /** Per-outcome children, looked up once: `inc({ outcome })` would hash the labels on every key check. */
  private readonly keyCheckByOutcome = new Map<string, { inc(): void }>();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Counts an answered request; labels by route pattern (`/v1/users/:id`), never by raw URL, to bound cardinality. */
  readonly recordRequest: RequestCompletionListener = (req, res, seconds) => {
    const route = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
    this.requests.record(req.method, route, res.statusCode, seconds);
  };

  /** Outcomes are a closed set (allowed and the refusal codes): no label per key or route. */
  recordKeyCheck(outcome: string): void {
    let counter = this.keyCheckByOutcome.get(outcome);
    if (!counter) {
      counter = this.keyChecks.labels({ outcome });
      this.keyCheckByOutcome.set(outcome, counter);
    }
    counter.inc();
  }
}
