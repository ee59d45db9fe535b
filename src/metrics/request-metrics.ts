import { Counter, type Metric, type Registry } from 'prom-client';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const LABEL_NAMES = ['method', 'route', 'status'] as const;

type Labels = Record<(typeof LABEL_NAMES)[number], string>;

interface Series {
  labels: Labels;
  /** Requests answered, and how many of them the counter was handed at the last scrape. */
  requests: number;
  exported: number;
  /** Latency observations per bucket (not cumulative; the last slot is above the largest bound). */
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * `http_requests_total` and `http_request_duration_seconds`, by method, route pattern and status.
 * Recording sits on every request, so it does the least it can: each label set's series is looked up
 * once and kept (routes are patterns, so the sets are few), and a request adds to plain numbers in it.
 * Prometheus reads them when it scrapes: the request count through a prom-client Counter's `collect`,
 * the latency through LatencyHistogram, which prints what a prom-client Histogram prints. A Histogram
 * child's `observe` validates and hashes its labels on every call (0.5 µs of the 0.8 a request cost,
 * `npm run bench:observation`); here a request costs one map lookup and a few additions.
 */
export class RequestMetrics {
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
    // prom-client types list its own metric classes only; the registry reads any metric through
    // `get()` and resets it through `reset()`, which is all LatencyHistogram is.
    registry.registerMetric(new LatencyHistogram(series) as unknown as Metric);
  }

  record(method: string, route: string, status: number, seconds: number): void {
    const id = `${method} ${status} ${route}`;
    let series = this.series.get(id);
    if (!series) {
      const labels = { method, route, status: String(status) };
      series = {
        labels,
        requests: 0,
        exported: 0,
        buckets: LATENCY_BUCKETS.map(() => 0).concat(0),
        sum: 0,
        count: 0,
      };
      this.series.set(id, series);
    }
    series.requests += 1;
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[bucket]) bucket++;
    series.buckets[bucket] += 1;
    series.sum += seconds;
    series.count += 1;
  }
}

/**
 * `http_request_duration_seconds` as a prom-client Histogram with these buckets prints it (cumulative
 * `_bucket` lines with `le` first, then `_sum` and `_count`; request-metrics.spec.ts compares the two),
 * from the counts RequestMetrics keeps. A reset of the registry forgets the observations, as it does a
 * Histogram's: a series shows again once it is observed again.
 */
class LatencyHistogram {
  readonly name = 'http_request_duration_seconds';
  readonly help = 'HTTP request latency in seconds, by method, route pattern and status.';
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  constructor(private readonly series: ReadonlyMap<string, Series>) {}

  get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: { value: number; labels: Record<string, string | number>; metricName: string }[];
  }> {
    const values = [];
    const bucketName = `${this.name}_bucket`;
    for (const { labels, buckets, sum, count } of this.series.values()) {
      if (count === 0) continue;
      let cumulative = 0;
      for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
        cumulative += buckets[i];
        values.push({
          value: cumulative,
          labels: { le: LATENCY_BUCKETS[i], ...labels },
          metricName: bucketName,
        });
      }
      values.push(
        { value: count, labels: { le: '+Inf', ...labels }, metricName: bucketName },
        { value: sum, labels: { ...labels }, metricName: `${this.name}_sum` },
        { value: count, labels: { ...labels }, metricName: `${this.name}_count` },
      );
    }
    const { name, help, type, aggregator } = this;
    return Promise.resolve({ name, help, type, aggregator, values });
  }

  reset(): void {
    for (const one of this.series.values()) {
      one.buckets.fill(0);
      one.sum = 0;
      one.count = 0;
    }
  }
}
