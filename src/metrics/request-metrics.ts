import type { Metric, Registry } from 'prom-client';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

type Labels = { method: string; route: string; status: string };

/** One line of a family, as prom-client's registry prints it: `metricName{labels} value`. */
interface Sample {
  metricName?: string;
  labels: Record<string, string | number>;
  value: number;
}

interface Series {
  labels: Labels;
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); the last slot is above the largest bound. */
  buckets: number[];
}

/**
 * `http_requests_total` and `http_request_duration_seconds`, by method, route pattern and status.
 *
 * Recording sits on every request, so it is a map lookup and three additions; prom-client's Counter
 * and Histogram would rebuild and validate a label hash on each call. The two families are handed to
 * prom-client's registry in its own metric format and printed by it, so /metrics reads as before.
 */
export class RequestMetrics {
  private readonly series = new Map<string, Series>();

  record(method: string, route: string, status: number, seconds: number): void {
    const id = `${method} ${status} ${route}`;
    let series = this.series.get(id);
    if (!series) {
      series = {
        labels: { method, route, status: String(status) },
        count: 0,
        sum: 0,
        buckets: new Array<number>(LATENCY_BUCKETS.length + 1).fill(0),
      };
      this.series.set(id, series);
    }
    series.count += 1;
    series.sum += seconds;
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[bucket]) bucket++;
    series.buckets[bucket] += 1;
  }

  registerWith(registry: Registry): void {
    registry.registerMetric(
      this.family(
        'http_requests_total',
        'HTTP requests answered, by method, route pattern and status.',
        'counter',
        () => [...this.series.values()].map((s): Sample => ({ labels: s.labels, value: s.count })),
      ),
    );
    registry.registerMetric(
      this.family(
        'http_request_duration_seconds',
        'HTTP request latency in seconds, by method, route pattern and status.',
        'histogram',
        () => [...this.series.values()].flatMap((s) => this.histogramValues(s)),
      ),
    );
  }

  /** Cumulative `_bucket` lines (Prometheus buckets count everything at or below `le`), `_sum`, `_count`. */
  private histogramValues(series: Series): Sample[] {
    const name = 'http_request_duration_seconds';
    const values: Sample[] = [];
    let cumulative = 0;
    LATENCY_BUCKETS.forEach((bound, i) => {
      cumulative += series.buckets[i];
      values.push({
        metricName: `${name}_bucket`,
        labels: { le: bound, ...series.labels },
        value: cumulative,
      });
    });
    values.push({
      metricName: `${name}_bucket`,
      labels: { le: '+Inf', ...series.labels },
      value: series.count,
    });
    values.push({ metricName: `${name}_sum`, labels: series.labels, value: series.sum });
    values.push({ metricName: `${name}_count`, labels: series.labels, value: series.count });
    return values;
  }

  /**
   * What prom-client's Registry uses of a metric: its name, `get()` for the values, `reset()`. Its
   * types only admit its own classes, hence the one cast.
   */
  private family(name: string, help: string, type: 'counter' | 'histogram', values: () => Sample[]): Metric {
    const family = {
      name,
      help,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
      reset: () => this.series.clear(),
    };
    return family as unknown as Metric;
  }
}
