import { ModulesContainer } from '@nestjs/core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signUpOrganization } from './support/factories';
import { pollUntil } from './support/keys';
import {
  createTestDatabase,
  dropTestDatabase,
  ServiceContext,
  startServiceContext,
  startTestApp,
  TestApp,
} from './support/test-app';
import { TaskWorker } from '../src/tasks/task-worker';
import { WebhookDeliveryWorker } from '../src/webhooks/webhook-delivery.worker';

const HAS_POSTGRES = Boolean(process.env.GATEHOUSE_TEST_SERVER_URL);

/**
 * The worker-only process (src/worker.ts boots WorkerModule): no controllers and no HTTP server, yet it
 * runs the tasks an API instance with no workers of its own queued. Two processes on one database, so
 * it needs PostgreSQL: the embedded database serves one process.
 */
(HAS_POSTGRES ? describe : describe.skip)('WorkerModule (needs PostgreSQL)', () => {
  let api: TestApp;
  let worker: ServiceContext;
  let databaseUrl: string;
  let dataDir: string;

  beforeAll(async () => {
    databaseUrl = (await createTestDatabase())!;
    // One data directory, so both read the same generated secrets (task credentials are sealed).
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-worker-'));
    api = await startTestApp({
      databaseUrl,
      dataDir,
      env: { WORKER_CONCURRENCY: '0', WEBHOOK_WORKERS: '0' },
    });
    worker = await startServiceContext({
      root: 'worker',
      databaseUrl,
      dataDir,
      env: { WORKER_CONCURRENCY: '1', WORKER_POLL_MS: '50', WEBHOOK_WORKERS: '1' },
    });
  });
  afterAll(async () => {
    await worker?.close();
    await api?.close();
    if (databaseUrl) await dropTestDatabase(databaseUrl);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('registers no controller, but both background workers', () => {
    const controllers = [...worker.get(ModulesContainer).values()].flatMap((module) => [
      ...module.controllers.keys(),
    ]);
    expect(controllers).toEqual([]);
    expect(worker.get(TaskWorker, { strict: false })).toBeInstanceOf(TaskWorker);
    expect(worker.get(WebhookDeliveryWorker, { strict: false })).toBeInstanceOf(WebhookDeliveryWorker);
  });

  it('runs a task queued through an API instance that has no workers', async () => {
    const org = await signUpOrganization(api.http, 'Worker');
    const created = await api.http
      .post('/v1/tasks')
      .set(org.auth)
      .send({ instruction: 'run me elsewhere', agent_type: 'echo' })
      .expect(202);

    const { value: task } = await pollUntil(
      async () => (await api.http.get(`/v1/tasks/${created.body.id}`).set(org.auth).expect(200)).body,
      (body) => body.status === 'succeeded' || body.status === 'failed',
      { timeoutMs: 15_000 },
    );
    expect(task).toMatchObject({ id: created.body.id, status: 'succeeded' });
  });
});
