import {
  context,
  createNoopMeter,
  type MeterProvider,
  metrics,
  propagation,
  ROOT_CONTEXT,
  trace,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { readDotEnv } from '../dot-env';

/**
 * OpenTelemetry, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (in the environment or `.env`): traces
 * and metrics over OTLP/HTTP (JSON) to that endpoint, with the official SDK and instrumentations of
 * `http` (requests served and outbound calls), `pg` and `ioredis`, and Gatehouse's own spans (the key
 * check's steps, a task's run) and counters (tasks finished, webhook deliveries).
 *
 * Started by the entry points' first import (api-telemetry.ts, worker-telemetry.ts): an instrumentation
 * patches a module when it is first required, so this runs before anything requires `http`, `pg` or
 * `ioredis`. Off, none of the SDK is loaded, and the code that makes spans asks `tracingOn()` first, so a
 * request pays a boolean.
 */
let on = false;
let shutdown: () => Promise<void> = async () => undefined;

/** Whether traces are exported: spans are made only then. */
export function tracingOn(): boolean {
  return on;
}

/** Gatehouse's own tracer (the SDK's no-op one while off). */
export function tracer(): Tracer {
  return trace.getTracer('gatehouse');
}

export function startTelemetry(serviceName: string): void {
  const env = { ...readDotEnv(), ...process.env };
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.replace(/\/+$/, '');
  if (!endpoint || env.OTEL_SDK_DISABLED === 'true' || on) return;
  // Loaded only when on: none of it is needed otherwise.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeTracerProvider } =
    require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } =
    require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { OTLPTraceExporter } =
    require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { OTLPMetricExporter } =
    require('@opentelemetry/exporter-metrics-otlp-http') as typeof import('@opentelemetry/exporter-metrics-otlp-http');
  const { MeterProvider, PeriodicExportingMetricReader } =
    require('@opentelemetry/sdk-metrics') as typeof import('@opentelemetry/sdk-metrics');
  const { resourceFromAttributes } =
    require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const noopMeterProvider: MeterProvider = { getMeter: () => createNoopMeter() };
  const { registerInstrumentations } =
    require('@opentelemetry/instrumentation') as typeof import('@opentelemetry/instrumentation');
  const { HttpInstrumentation } =
    require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { PgInstrumentation } =
    require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { IORedisInstrumentation } =
    require('@opentelemetry/instrumentation-ioredis') as typeof import('@opentelemetry/instrumentation-ioredis');
  /* eslint-enable @typescript-eslint/no-require-imports */

  const resource = resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || serviceName });
  const headers = otlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS);
  // OTEL_TRACES_SAMPLER=parentbased_traceidratio with OTEL_TRACES_SAMPLER_ARG=<0..1> traces that share of
  // the requests (and whatever a traced request's caller asked for); otherwise every request.
  const ratio = numberOr(env.OTEL_TRACES_SAMPLER_ARG, 1);
  const sampler =
    env.OTEL_TRACES_SAMPLER === 'parentbased_traceidratio' || env.OTEL_TRACES_SAMPLER === 'traceidratio'
      ? new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(Math.min(1, ratio)) })
      : undefined;
  const traces = new NodeTracerProvider({
    resource,
    ...(sampler ? { sampler } : {}),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint}/v1/traces`, headers }), {
        scheduledDelayMillis: numberOr(env.OTEL_BSP_SCHEDULE_DELAY, 5000),
      }),
    ],
  });
  // The global tracer provider, AsyncLocalStorage as the context manager, W3C traceparent propagation.
  traces.register();
  const meters = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: `${endpoint}/v1/metrics`, headers }),
        exportIntervalMillis: numberOr(env.OTEL_METRIC_EXPORT_INTERVAL, 60_000),
      }),
    ],
  });
  metrics.setGlobalMeterProvider(meters);
  registerInstrumentations({
    // The instrumentations' own metrics (a histogram of every request and statement) are left out: the
    // API's request metrics are GET /metrics's, and recording them cost every request, traced or not.
    meterProvider: noopMeterProvider,
    instrumentations: [
      new HttpInstrumentation({
        // Probes every few seconds would be most of the traces.
        ignoreIncomingRequestHook: (request) => request.url?.startsWith('/health/') ?? false,
        // The exporter's own posts would trace themselves.
        ignoreOutgoingRequestHook: (options) =>
          `${options.hostname ?? options.host}:${options.port}` === new URL(endpoint).host,
      }),
      new PgInstrumentation({ requireParentSpan: true }),
      // A command's name only: its arguments are keys and counts, and could one day be something secret.
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
    ],
  });
  on = true;
  shutdown = async () => {
    await Promise.allSettled([traces.shutdown(), meters.shutdown()]);
  };
}

/** Exports what is buffered and stops (the entry points' last step of a stop). */
export function stopTelemetry(): Promise<void> {
  return shutdown();
}

/** The W3C traceparent of the active span, to keep with work that another process continues. */
export function activeTraceParent(): string | undefined {
  if (!on) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** The context a kept traceparent continues (the root context for none). */
export function contextOf(traceParent: string | null | undefined): Context {
  return traceParent ? propagation.extract(ROOT_CONTEXT, { traceparent: traceParent }) : ROOT_CONTEXT;
}

/** Ends `span` when `work` settles, recording a failure; `work`'s own answer or error either way. */
export function endWith<T>(span: Span, work: T | Promise<T>): T | Promise<T> {
  if (!(work instanceof Promise)) {
    span.end();
    return work;
  }
  return work.then(
    (value) => {
      span.end();
      return value;
    },
    (error: unknown) => {
      span.recordException(error as Error);
      span.setStatus({ code: 2 });
      span.end();
      throw error;
    },
  );
}

function numberOr(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value && Number.isFinite(n) && n >= 0 ? n : fallback;
}

/** OTEL_EXPORTER_OTLP_HEADERS: `name=value,name=value`, as the specification writes it. */
function otlpHeaders(value: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (value ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0)
      headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}

/**
 * `work` in a span `name` under `parent` (a kept traceparent's context, contextOf), ended when it
 * settles; a rejection marks the span failed and is `work`'s own.
 */
export function inSpan<T>(
  name: string,
  parent: Context,
  attributes: Record<string, string | number>,
  work: () => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(
    name,
    { attributes },
    parent,
    (span) => endWith(span, work()) as Promise<T>,
  );
}

/** A counter of Gatehouse's meter (the SDK's no-op one while off). */
export function counter(name: string, description: string) {
  return metrics.getMeter('gatehouse').createCounter(name, { description });
}
