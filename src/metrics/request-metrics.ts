import { Counter, Histogram, type Registry } from 'prom-client';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const LABEL_NAMES = ['method', 'route', 'status'] as const;

interface SeriesChildren {
  requests: { inc(): void };
  latency: { observe(seconds: number): void };
}

/**
 * `http_requests_total` and `http_request_duration_seconds`, by method, route pattern and status, as
 * prom-client Counter and Histogram. Recording sits on every request, so each label set's children
 * (prom-client's `labels(...)`) are looked up once and kept: a request then costs one map lookup
 * instead of prom-client hashing its labels twice. Routes are patterns, so the label sets are few.
 */
export class RequestMetrics {
  private readonly requests: Counter<(typeof LABEL_NAMES)[number]>;
  private readonly latency: Histogram<(typeof LABEL_NAMES)[number]>;
  private readonly children = new Map<string, SeriesChildren>();

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status.',
      labelNames: LABEL_NAMES,
      registers: [registry],
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
    let series = this.children.get(id);
    if (!series) {
      const labels = { method, route, status: String(status) };
      series = { requests: this.requests.labels(labels), latency: this.latency.labels(labels) };
      this.children.set(id, series);
    }
    series.requests.inc();
    series.latency.observe(seconds);
  }
}
