import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { example } from '../clients/typescript/example';
import { startTestApp, TestApp } from './support/test-app';

/**
 * clients/typescript/example.ts, the typed client's example (openapi-fetch over the types generated from
 * the OpenAPI document with openapi-typescript's default options), run against the app over real HTTP:
 * sign in, a key with an expiration, both verifies, a file up and its bytes back, a task followed through
 * its event stream, the audit log with names, rotate, delete, and the problem a deleted key gets.
 */
describe('the typed client example', () => {
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
    const result = await example(baseUrl, admin);
    expect(result.keyId).toMatch(/^key_/);
    expect(result.verifiedRole).toBe('developer');
    expect(result.serviceVerdict).toBe('valid');
    // The bytes as uploaded: read as a Blob, not through openapi-fetch's default JSON parse.
    expect(result.fileText).toBe('notes for the agent');
    // The stream, parsed, from the first event to the terminal status, which ends it.
    expect(result.statuses.at(-1)).toBe('succeeded');
    expect(result.statuses).toContain('running');
    // Resumed after its last event (Last-Event-ID), an ended task's stream sends nothing more.
    expect(result.lastSeen).toBeGreaterThanOrEqual(result.statuses.length);
    expect(result.afterResume).toBe(0);
    expect(result.task).toMatchObject({ status: 'succeeded', attachments: [result.fileId] });
    expect(result.task.result).toMatchObject({ output: 'Summarise the notes' });
    expect(result.rotatedKeyWorks).toBe(true);
    expect(result.auditActions).toEqual(expect.arrayContaining(['key.created', 'key.rotated']));
    // `expand` sent comma-separated (the document's style: form, explode: false) and read as two values.
    // Without `expand` an actor has no name at all.
    expect(result.auditActorNames.length).toBeGreaterThan(0);
    for (const name of result.auditActorNames) expect(name).toEqual(expect.stringMatching(/\S/));
    expect(result.afterDelete).toEqual({ status: 401, code: 'invalid_credentials' });
  });
});
