import { Counter, Histogram, type Registry } from 'prom-client';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const LABEL_NAMES = ['method', 'route', 'status'] as const;

type Labels = Record<(typeof LABEL_NAMES)[number], string>;

interface Series {
  labels: Labels;
  /** Requests answered, and how many of them the counter was handed at the last scrape. */
  requests: number;
  exported: number;
  latency: { observe(seconds: number): void };
}

/**
 * `http_requests_total` and `http_request_duration_seconds`, by method, route pattern and status, as
 * prom-client Counter and Histogram. Recording sits on every request, so it does the least it can: each
 * label set's series is looked up once and kept (routes are patterns, so the sets are few); the request
 * count is a plain number handed to the Counter when it is scraped (its `collect`), and the latency goes
 * to the Histogram's child for the label set (prom-client has no way to hand it bucket counts). A request
 * costs one map lookup, an addition and one observe, instead of prom-client hashing its labels twice.
 */
export class RequestMetrics {
  private readonly latency: Histogram<(typeof LABEL_NAMES)[number]>;
  private readonly series = new Map<string, Series>();

  constructor(registry: Registry) {
    const series = this.series;
    new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status.',
      labelNames: LABEL_NAMES,
      registers: [registry],
      collect() {
        for (const one of series.values()) {
          if (one.requests === one.exported) continue;
          this.inc(one.labels, one.requests - one.exported);
          one.exported = one.requests;
        }
      },
    });
    this.latency = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency in seconds, by method, route pattern and status.',
      labelNames: LABEL_NAMES,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
  }

  record(method: string, route: string, status: number, seconds: number): void {
    const id = `${method} ${status} ${route}`;
    let series = this.series.get(id);
    if (!series) {
      const labels = { method, route, status: String(status) };
      series = { labels, requests: 0, exported: 0, latency: this.latency.labels(labels) };
      this.series.set(id, series);
    }
    series.requests += 1;
    series.latency.observe(seconds);
  }
}
