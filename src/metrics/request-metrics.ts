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
 * label set's series is made once and kept (routes are patterns, so the sets are few); the request
 * count is a plain number handed to the Counter when it is scraped (its `collect`), and the latency goes
 * to the Histogram's child for the label set (prom-client has no way to hand it bucket counts). A request
 * costs one map lookup, an addition and one observe, instead of prom-client hashing its labels twice.
 */
export class RequestMetrics {
  private readonly latency: Histogram<(typeof LABEL_NAMES)[number]>;
  /**
   * Series by route, status and method: lookups on the strings and number the request already holds
   * (a route pattern's and a method's strings keep their hash), where one key made of the three was a
   * new string to build and hash on every request.
   */
  private readonly series = new Map<string, Map<number, Map<string, Series>>>();

  constructor(registry: Registry) {
    const series = this.series;
    new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status.',
      labelNames: LABEL_NAMES,
      registers: [registry],
      collect() {
        for (const byStatus of series.values())
          for (const byMethod of byStatus.values())
            for (const one of byMethod.values()) {
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
    const series = this.series.get(route)?.get(status)?.get(method) ?? this.newSeries(method, route, status);
    series.requests += 1;
    series.latency.observe(seconds);
  }

  private newSeries(method: string, route: string, status: number): Series {
    let byStatus = this.series.get(route);
    if (!byStatus) this.series.set(route, (byStatus = new Map()));
    let byMethod = byStatus.get(status);
    if (!byMethod) byStatus.set(status, (byMethod = new Map()));
    const labels = { method, route, status: String(status) };
    const series = { labels, requests: 0, exported: 0, latency: this.latency.labels(labels) };
    byMethod.set(method, series);
    return series;
  }
}
