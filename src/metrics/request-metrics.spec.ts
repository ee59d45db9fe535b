import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { RequestMetrics } from './request-metrics';

/** prom-client's Counter and Histogram used plainly (labels on every call): what the cached children must match. */
function reference(): { registry: Registry; record: RequestMetrics['record'] } {
  const registry = new Registry();
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency in seconds, by method, route pattern and status.',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  return {
    registry,
    record: (method, route, status, seconds) => {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
    },
  };
}

const sortedLines = (text: string): string[] => text.split('\n').filter(Boolean).sort();

describe('RequestMetrics', () => {
  it('prints exactly what plain Counter and Histogram calls print for the same requests', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            method: fc.constantFrom('GET', 'POST', 'DELETE'),
            route: fc.constantFrom('/v1/auth/verify', '/v1/api-keys/:id', 'unmatched'),
            status: fc.constantFrom(200, 201, 404, 429),
            // Bounds themselves included: a bucket counts observations at or below its bound.
            seconds: fc.oneof(
              fc.constantFrom(0, 0.001, 0.005, 1, 5, 7),
              fc.double({ min: 0, max: 10, noNaN: true }),
            ),
          }),
          { maxLength: 40 },
        ),
        async (requests) => {
          const oursRegistry = new Registry();
          const ours = new RequestMetrics(oursRegistry);
          const theirs = reference();
          for (const { method, route, status, seconds } of requests) {
            ours.record(method, route, status, seconds);
            theirs.record(method, route, status, seconds);
          }
          // Sums may be added in another order than prom-client's; compare them numerically.
          const [a, b] = [
            sortedLines(await oursRegistry.metrics()),
            sortedLines(await theirs.registry.metrics()),
          ];
          const isSum = (line: string) => line.startsWith('http_request_duration_seconds_sum');
          expect(a.filter((line) => !isSum(line))).toEqual(b.filter((line) => !isSum(line)));
          const sums = (lines: string[]) => lines.filter(isSum).map((line) => Number(line.split(' ').pop()));
          sums(a).forEach((sum, i) => expect(sum).toBeCloseTo(sums(b)[i], 9));
        },
      ),
    );
  });

  it('forgets its series when the registry is reset, and counts anew after', async () => {
    const registry = new Registry();
    const metrics = new RequestMetrics(registry);
    metrics.record('GET', '/health/live', 200, 0.002);
    expect(await registry.metrics()).toContain(
      'http_requests_total{method="GET",route="/health/live",status="200"} 1',
    );
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain('route="/health/live"');
    metrics.record('GET', '/health/live', 200, 0.002);
    expect(await registry.metrics()).toContain(
      'http_requests_total{method="GET",route="/health/live",status="200"} 1',
    );
  });
});
