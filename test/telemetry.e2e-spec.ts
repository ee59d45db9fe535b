import request from 'supertest';
import { FakeAgentServer } from './support/agent-server';
import { exited, type CapturedChild } from './support/child-process';
import { signUpOrganization } from './support/factories';
import { describeWithPostgres, sharedSecrets } from './support/instances';
import { createKey, pollUntil } from './support/keys';
import { scratchDataDirs, spawnMain, spawnWorker, waitUntilLive } from './support/main-process';
import { freeLoopbackPort } from './support/ports';
import { createTestDatabase, dropTestDatabase, instanceDatabaseEnv, runRedisEnv } from './support/test-app';

/**
 * OpenTelemetry (docs/production.md, "Running at scale"): with OTEL_EXPORTER_OTLP_ENDPOINT set, the API
 * and the worker process export traces and metrics over OTLP/HTTP (JSON), here to a receiver of the
 * test's own. A task created over HTTP and run by the worker process arrives as one trace.
 */

jest.setTimeout(120_000);

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}
interface Exported {
  service: string;
  span: OtlpSpan;
}

/** Every span the receiver got, with the service that sent it. */
function spansOf(receiver: FakeAgentServer): Exported[] {
  const exported: Exported[] = [];
  for (const { json } of receiver.requestsTo('/v1/traces')) {
    for (const resourceSpans of json?.resourceSpans ?? []) {
      const service = resourceSpans.resource?.attributes?.find(
        (a: { key: string }) => a.key === 'service.name',
      )?.value?.stringValue;
      for (const scope of resourceSpans.scopeSpans ?? [])
        for (const span of scope.spans ?? []) exported.push({ service, span });
    }
  }
  return exported;
}

/** An outbound HTTP call's span (a client span with a URL; PostgreSQL's and Redis's are client spans too). */
const isHttpCall = (span: OtlpSpan) => span.kind === 3 && attribute(span, 'url.full') !== undefined;

const attribute = (span: OtlpSpan, ...keys: string[]) =>
  span.attributes?.find((a) => keys.includes(a.key))?.value.stringValue;

/** The metric names the receiver got from `service`. */
function metricNamesOf(receiver: FakeAgentServer, service: string): Set<string> {
  const names = new Set<string>();
  for (const { json } of receiver.requestsTo('/v1/metrics')) {
    for (const resourceMetrics of json?.resourceMetrics ?? []) {
      const from = resourceMetrics.resource?.attributes?.find(
        (a: { key: string }) => a.key === 'service.name',
      )?.value?.stringValue;
      if (from !== service) continue;
      for (const scope of resourceMetrics.scopeMetrics ?? [])
        for (const metric of scope.metrics ?? []) names.add(metric.name);
    }
  }
  return names;
}

describeWithPostgres('OpenTelemetry')('OpenTelemetry over OTLP/HTTP', () => {
  const tempDir = scratchDataDirs();

  it('a task created over HTTP and run by a worker process is one trace: the request, its key check, PostgreSQL, Redis, the run and its call to the agent', async () => {
    const receiver = await FakeAgentServer.start();
    receiver.on('/v1/traces', () => ({ status: 200, json: {} }));
    receiver.on('/v1/metrics', () => ({ status: 200, json: {} }));
    const agentServer = await FakeAgentServer.start();
    const agentUrl = agentServer.on('/run', () => ({ status: 200, json: { answer: 42 } }));
    const databaseUrl = (await createTestDatabase())!;
    const port = await freeLoopbackPort();
    const base = `http://127.0.0.1:${port}`;
    const shared = {
      ...sharedSecrets(),
      ...instanceDatabaseEnv(databaseUrl),
      ...runRedisEnv(),
      LOG_LEVEL: 'warn',
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin,
      // Exported within a fraction of a second, so the test waits for the spans, not for a schedule.
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_METRIC_EXPORT_INTERVAL: '300',
    };
    const children: CapturedChild[] = [];
    try {
      const api = spawnMain({
        ...shared,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: tempDir(),
        ALLOW_SIGNUP: 'true',
        // The worker process runs every task.
        WORKER_CONCURRENCY: '0',
      });
      children.push(api);
      await waitUntilLive(api, base);
      const worker = spawnWorker({ ...shared, DATA_DIR: tempDir() });
      children.push(worker);

      const org = await signUpOrganization(request(base));
      const key = await createKey(request(base), org.auth, { role: 'developer', type: 'service' });
      const agent = await request(base)
        .post('/v1/agents')
        .set(org.auth)
        .send({ name: 'traced', type: 'http', config: { url: agentUrl } })
        .expect(201);
      const created = await request(base)
        .post('/v1/tasks')
        .set(key.auth)
        .send({ instruction: 'trace me', agent_type: 'http', agent_id: agent.body.id })
        .expect(202);
      const ended = await request(base).get(`/v1/tasks/${created.body.id}?wait=60`).set(key.auth).expect(200);
      expect(ended.body).toMatchObject({ status: 'succeeded', result: { answer: 42 } });

      // The run's span, from the worker process, once exported; then its trace.
      const run = await pollUntil(
        async () =>
          spansOf(receiver).find(
            ({ service, span }) =>
              service === 'gatehouse-worker' &&
              span.name === 'task.run' &&
              attribute(span, 'gatehouse.task_id') === created.body.id,
          ),
        (found) => found !== undefined,
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      const traceId = run.value!.span.traceId;
      const inTrace = async () => spansOf(receiver).filter(({ span }) => span.traceId === traceId);
      // The API's spans of the request that created the task, in the same trace: its key check's steps,
      // its statements and its Redis commands; the worker's: the run, its statements, its call to the agent.
      const complete = await pollUntil(
        inTrace,
        (spans) =>
          spans.some(
            ({ service, span }) => service === 'gatehouse-api' && span.name === 'key_check.rate_limit',
          ) && spans.some(({ service, span }) => service === 'gatehouse-worker' && span.kind === 3),
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      const spans = complete.value;
      const names = (service: string) => spans.filter((s) => s.service === service).map((s) => s.span.name);
      expect(names('gatehouse-api')).toEqual(
        expect.arrayContaining(['key_check.credential', 'key_check.permission', 'key_check.rate_limit']),
      );
      const system = (service: string, value: string) =>
        spans.some(
          (s) => s.service === service && attribute(s.span, 'db.system', 'db.system.name') === value,
        );
      expect(system('gatehouse-api', 'postgresql')).toBe(true);
      expect(system('gatehouse-api', 'redis')).toBe(true);
      expect(system('gatehouse-worker', 'postgresql')).toBe(true);
      // The worker's run hangs under a span of the API's request.
      const apiSpanIds = new Set(
        spans.filter((s) => s.service === 'gatehouse-api').map((s) => s.span.spanId),
      );
      expect(apiSpanIds.has(run.value!.span.parentSpanId!)).toBe(true);
      // Its call to the agent: a client span of the run's trace, to the agent's port.
      const call = spans.find((s) => s.service === 'gatehouse-worker' && isHttpCall(s.span));
      expect(attribute(call!.span, 'url.full')).toBe(agentUrl);
      // Redis commands are named, never given with their arguments (keys and values stay out of traces).
      const redisStatements = spans.filter(
        (s) => attribute(s.span, 'db.system.name', 'db.system') === 'redis',
      );
      for (const s of redisStatements)
        expect(attribute(s.span, 'db.query.text', 'db.statement')).toMatch(/^\w+$/);

      // The worker process's own metrics: the task it finished.
      const metrics = await pollUntil(
        async () => metricNamesOf(receiver, 'gatehouse-worker'),
        (names) => names.has('gatehouse.tasks.finished'),
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      expect(metrics.value.has('gatehouse.tasks.finished')).toBe(true);
    } finally {
      for (const child of children) {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited(child, 10_000);
      }
      await agentServer.close();
      await receiver.close();
      await dropTestDatabase(databaseUrl);
    }
  });
});
