import { Injectable } from '@nestjs/common';
import type { RequestCompletionListener } from '../common/request-context';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { RequestMetrics } from './request-metrics';
import type { WriteBacklog } from '../database/write-backlog';

/**
 * Prometheus metrics. Each application instance owns its registry (not prom-client's global one), so
 * several instances in one process, as the tests boot them, do not collide.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly requests = new RequestMetrics(this.registry);

  /** Key checks by outcome, plain numbers on the request path, handed to the counter when scraped. */
  private readonly keyChecks = new Map<string, { checks: number; exported: number }>();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    const keyChecks = this.keyChecks;
    new Counter({
      name: 'gatehouse_key_checks_total',
      help: 'Key checks of requests to protected routes, by outcome: allowed, or the refusal code.',
      labelNames: ['outcome'],
      registers: [this.registry],
      collect() {
        for (const [outcome, count] of keyChecks) {
          if (count.checks === count.exported) continue;
          this.inc({ outcome }, count.checks - count.exported);
          count.exported = count.checks;
        }
      },
    });
  }

  /**
   * Exports a buffer of writes waiting for the database (audit entries, usage counters): how much waits,
   * and how much was dropped. Read when scraped: nothing on the request path.
   */
  exportBacklog(
    backlog: WriteBacklog,
    names: Record<'waiting' | 'dropped', [name: string, help: string]>,
  ): void {
    new Gauge({
      name: names.waiting[0],
      help: names.waiting[1],
      registers: [this.registry],
      collect() {
        this.set(backlog.waiting);
      },
    });
    let exported = 0;
    new Counter({
      name: names.dropped[0],
      help: names.dropped[1],
      registers: [this.registry],
      collect() {
        this.inc(backlog.dropped - exported);
        exported = backlog.dropped;
      },
    });
  }

  /** Counts an answered request; labels by route pattern (`/v1/users/:id`), never by raw URL, to bound cardinality. */
  readonly recordRequest: RequestCompletionListener = (req, res, seconds) => {
    const route = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
    this.requests.record(req.method, route, res.statusCode, seconds);
  };

  /** Outcomes are a closed set (allowed and the refusal codes): no label per key or route. */
  recordKeyCheck(outcome: string): void {
    const count = this.keyChecks.get(outcome);
    if (count) count.checks += 1;
    else this.keyChecks.set(outcome, { checks: 1, exported: 0 });
  }
}
