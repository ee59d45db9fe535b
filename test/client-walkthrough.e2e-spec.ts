import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { walkthrough } from '../examples/walkthrough';
import { startTestApp, TestApp } from './support/test-app';

/**
 * examples/walkthrough.ts, written against the client generated from the OpenAPI document, run
 * against the app over real HTTP: sign in, a key with an expiration, verify, upload, a task to
 * completion, rotate, the audit log, delete.
 */
describe('the generated-client walkthrough', () => {
  let t: TestApp;
  let baseUrl: string;
  const admin = { email: 'client-admin@example.com', password: 'a-long-enough-password' };

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        BOOTSTRAP_ADMIN_EMAIL: admin.email,
        BOOTSTRAP_ADMIN_PASSWORD: admin.password,
        WORKER_CONCURRENCY: '2',
      },
    });
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${((t.app.getHttpServer() as Server).address() as AddressInfo).port}`;
  });
  afterAll(() => t?.close());

  it('runs end to end with the types the document describes', async () => {
    const result = await walkthrough(baseUrl, admin);
    expect(result.keyId).toMatch(/^key_/);
    expect(result.verifiedRole).toBe('developer');
    expect(result.task).toMatchObject({ status: 'succeeded', attachments: [result.fileId] });
    expect(result.task.result).toMatchObject({ output: 'Summarise the notes' });
    expect(result.rotatedKeyWorks).toBe(true);
    expect(result.auditActions).toEqual(expect.arrayContaining(['key.created', 'key.rotated']));
    expect(result.statusAfterDelete).toBe(401);
  });
});
