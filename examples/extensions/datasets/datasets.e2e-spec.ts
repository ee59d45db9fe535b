import { DataSource } from 'typeorm';
import { waitFor } from '../../../test/support/agent-server';
import type { AuditEntry } from '../../../test/support/audit-log';
import { expectProblem, signUpOrganization, SignedUpOrganization } from '../../../test/support/factories';
import { createKey, CreatedKey } from '../../../test/support/keys';
import { CALLS_LOCAL_TARGETS } from '../../../test/support/outbound-targets';
import { startTestApp, TestApp } from '../../../test/support/test-app';
import { verifyStandardWebhook, WebhookReceiver } from '../../../test/support/webhook-receiver';
import { datasetsExtension } from './datasets.extension';

/** The enum of one of the document's component schemas (AuditAction, AuditActionFilter, WebhookEventType). */
const enumOf = (document: { components: { schemas: Record<string, { enum: string[] }> } }, schema: string) =>
  document.components.schemas[schema].enum;

/** The datasets resource, loaded as one line of an extension list would load it. */
describe('example extension: a resource with permissions, a table and routes (datasets)', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  let viewer: CreatedKey;
  let developer: CreatedKey;
  beforeAll(async () => {
    // Webhook deliveries on, to the tests' own receiver on 127.0.0.1.
    t = await startTestApp({
      extensions: [datasetsExtension],
      env: { ...CALLS_LOCAL_TARGETS, WEBHOOK_WORKERS: '1' },
    });
    org = await signUpOrganization(t.http, 'Datasets');
    viewer = await createKey(t.http, org.auth, { role: 'viewer', type: 'service' });
    developer = await createKey(t.http, org.auth, { role: 'developer', type: 'service' });
  });
  afterAll(() => t?.close());

  it('creates a dataset with an id of its own prefix and lists it, newest first', async () => {
    const first = await t.http.post('/v1/datasets').set(developer.auth).send({ name: 'Tickets' }).expect(201);
    expect(first.body).toEqual({
      id: expect.stringMatching(/^ds_[0-9A-Za-z]{22}$/),
      name: 'Tickets',
      description: null,
      created_at: expect.any(String),
    });
    const second = await t.http
      .post('/v1/datasets')
      .set(developer.auth)
      .send({ name: 'Invoices', description: 'scanned' })
      .expect(201);

    const listed = await t.http.get('/v1/datasets?limit=1').set(viewer.auth).expect(200);
    expect(listed.body).toEqual({ data: [second.body], next_cursor: expect.any(String) });
    const rest = await t.http
      .get(`/v1/datasets?limit=1&cursor=${listed.body.next_cursor}`)
      .set(viewer.auth)
      .expect(200);
    expect(rest.body.data).toEqual([first.body]);
    expect((await t.http.get(`/v1/datasets/${first.body.id}`).set(viewer.auth).expect(200)).body).toEqual(
      first.body,
    );
  });

  it('grants what its declaration gives the built-in roles, and refuses the rest', async () => {
    expectProblem(await t.http.post('/v1/datasets').set(viewer.auth).send({ name: 'x' }), 403, 'forbidden');
    expectProblem(await t.http.get('/v1/datasets'), 401, 'missing_credentials');
    const verified = await t.http.get('/v1/auth/verify').set(developer.auth).expect(200);
    expect(verified.body.permissions).toEqual(
      expect.arrayContaining(['datasets:create', 'datasets:read', 'datasets:delete']),
    );
    const viewerRole = await t.http.get('/v1/roles/viewer').set(org.auth).expect(200);
    expect(viewerRole.body.permissions.datasets).toEqual(['read']);
  });

  it('is in the permission catalogue: GET /v1/permissions, custom roles and the OpenAPI document', async () => {
    const catalogue = await t.http.get('/v1/permissions').set(viewer.auth).expect(200);
    expect(catalogue.body.data).toContainEqual({
      resource: 'datasets',
      actions: ['create', 'read', 'update', 'delete', 'execute'],
    });
    const role = await t.http
      .post('/v1/roles')
      .set(org.auth)
      .send({ role_name: 'dataset_reader', permissions: { datasets: ['read'] } })
      .expect(201);
    expect(role.body.permissions).toEqual({ datasets: ['read'] });
    const reader = await createKey(t.http, org.auth, { role: 'dataset_reader', type: 'service' });
    await t.http.get('/v1/datasets').set(reader.auth).expect(200);
    expectProblem(await t.http.get('/v1/agents').set(reader.auth), 403, 'forbidden');

    const document = (await t.http.get('/openapi.json').expect(200)).body;
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/v1/datasets', '/v1/datasets/{id}']),
    );
  });

  it("answers 404 for another organization's dataset and for an id of another kind", async () => {
    const other = await signUpOrganization(t.http, 'Other');
    const theirs = await t.http.post('/v1/datasets').set(other.auth).send({ name: 'Theirs' }).expect(201);
    expectProblem(await t.http.get(`/v1/datasets/${theirs.body.id}`).set(viewer.auth), 404, 'not_found');
    expect((await t.http.get('/v1/datasets').set(viewer.auth).expect(200)).body.data).not.toContainEqual(
      theirs.body,
    );
    expectProblem(await t.http.get(`/v1/datasets/${org.organizationId}`).set(viewer.auth), 404, 'not_found');
  });

  it('refuses an invalid dataset and stores nothing', async () => {
    const before = (await t.http.get('/v1/datasets?limit=100').set(viewer.auth).expect(200)).body.data;
    const refused = await t.http.post('/v1/datasets').set(developer.auth).send({ name: '   ' });
    expect(expectProblem(refused, 400, 'validation_failed').errors).toEqual([
      expect.objectContaining({ field: 'name' }),
    ]);
    expect((await t.http.get('/v1/datasets?limit=100').set(viewer.auth).expect(200)).body.data).toEqual(
      before,
    );
  });

  it('has the table its entity describes: its migration ran, and TypeORM finds nothing left to change', async () => {
    const dataSource = t.app.get(DataSource);
    const pending = await dataSource.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((query) => query.query).filter((sql) => sql.includes('datasets'))).toEqual(
      [],
    );
    const [{ name }] = await dataSource.query<{ name: string }[]>(
      `SELECT name FROM migrations WHERE name = 'Datasets1795632887238'`,
    );
    expect(name).toBe('Datasets1795632887238');
  });
  describe('audit actions and a webhook event of its own, declared by its module', () => {
    const auditLog = async (query: Record<string, string>): Promise<AuditEntry[]> =>
      (
        await t.http
          .get('/v1/audit-log')
          .query({ ...query, limit: 100 })
          .set(org.auth)
          .expect(200)
      ).body.data;

    it('records its create, update and delete in the audit log, and ?action= finds them', async () => {
      const created = await t.http
        .post('/v1/datasets')
        .set(developer.auth)
        .send({ name: 'Audited' })
        .expect(201);
      const id = created.body.id;
      const updated = await t.http
        .patch(`/v1/datasets/${id}`)
        .set(developer.auth)
        .send({ description: 'changed' })
        .expect(200);
      expect(updated.body).toEqual({ ...created.body, description: 'changed' });
      await t.http.delete(`/v1/datasets/${id}`).set(developer.auth).expect(204);
      expectProblem(await t.http.get(`/v1/datasets/${id}`).set(viewer.auth), 404, 'not_found');

      const actor = { type: 'api_key', id: developer.id };
      const ofThisDataset = (entries: AuditEntry[]) => entries.filter((e) => e.details.dataset_id === id);
      const group = ofThisDataset(await auditLog({ action: 'dataset.*' }));
      expect(group.map(({ action, actor, details }) => ({ action, actor, details }))).toEqual([
        { action: 'dataset.deleted', actor, details: { dataset_id: id, name: 'Audited' } },
        { action: 'dataset.updated', actor, details: { dataset_id: id, fields: ['description'] } },
        { action: 'dataset.created', actor, details: { dataset_id: id, name: 'Audited' } },
      ]);
      expect(ofThisDataset(await auditLog({})).map((e) => e.id)).toEqual(group.map((e) => e.id));
      for (const action of ['dataset.created', 'dataset.updated', 'dataset.deleted']) {
        expect(ofThisDataset(await auditLog({ action })).map((e) => e.action)).toEqual([action]);
      }
      // Beside the core's: a core filter still finds only its own.
      expect((await auditLog({ action: 'key.*' })).every((e) => e.action.startsWith('key.'))).toBe(true);
    });

    it('still refuses an action nobody declared with 400 naming the field, and lists its own among the rest', async () => {
      for (const action of ['dataset.exploded', 'datasets.*', 'dataset.']) {
        const problem = expectProblem(
          await t.http.get('/v1/audit-log').query({ action }).set(org.auth),
          400,
          'validation_failed',
        );
        expect(problem.errors).toEqual([
          { field: 'action', message: expect.stringContaining('dataset.created') },
        ]);
      }
    });

    it('is in the OpenAPI document: the audit enums, the webhook event types and the webhooks section', async () => {
      const document = (await t.http.get('/openapi.json').expect(200)).body;
      expect(enumOf(document, 'AuditAction')).toEqual(
        expect.arrayContaining(['dataset.created', 'dataset.updated', 'dataset.deleted', 'key.created']),
      );
      expect(enumOf(document, 'AuditActionFilter')).toEqual(
        expect.arrayContaining(['dataset.created', 'dataset.*', 'key.created', 'key.*']),
      );
      expect(enumOf(document, 'WebhookEventType')).toEqual(
        expect.arrayContaining(['dataset.created', 'key.created']),
      );
      expect(enumOf(document, 'WebhookEventType')).not.toContain('dataset.updated');
      const body = document.webhooks['dataset.created'].post.requestBody.content['application/json'].schema;
      expect(body.properties.data).toEqual({ $ref: '#/components/schemas/DatasetCreatedData' });
      expect(document.components.schemas.DatasetCreatedData.required).toEqual(
        expect.arrayContaining(['dataset_id', 'name', 'actor']),
      );
    });

    it('delivers dataset.created to an endpoint subscribed to it, signed as every event', async () => {
      const receiver = await WebhookReceiver.start();
      try {
        const webhook = await t.http
          .post('/v1/webhooks')
          .set(org.auth)
          .send({ url: receiver.url('/datasets'), events: ['dataset.created'] })
          .expect(201);
        expect(webhook.body.events).toEqual(['dataset.created']);
        const created = await t.http
          .post('/v1/datasets')
          .set(developer.auth)
          .send({ name: 'Hooked' })
          .expect(201);

        const delivered = await waitFor(
          () => receiver.at('/datasets').find((r) => r.json?.data?.dataset_id === created.body.id),
          (found) => found !== undefined,
          { timeoutMs: 20_000 },
        );
        expect(delivered?.json).toEqual({
          type: 'dataset.created',
          timestamp: expect.any(String),
          data: { dataset_id: created.body.id, name: 'Hooked', actor: { type: 'api_key', id: developer.id } },
        });
        expect(verifyStandardWebhook(webhook.body.secret, delivered!)).toBe(true);
      } finally {
        await receiver.close();
      }
    });

    it('refuses a subscription to an event it does not record', async () => {
      const refused = await t.http
        .post('/v1/webhooks')
        .set(org.auth)
        .send({ url: 'http://127.0.0.1:9/hook', events: ['dataset.created', 'dataset.updated'] });
      expect(expectProblem(refused, 400, 'validation_failed').errors).toEqual([
        { field: 'events', message: expect.stringContaining('dataset.created') },
      ]);
    });
  });

  // The core alone: with the examples in the deployment's list (CI), every other app has this one.
  it('is unknown to an app that does not load it: its filters and its event are a 400', async () => {
    const core = await startTestApp({ core: true });
    try {
      const admin = await signUpOrganization(core.http, 'Core only');
      for (const action of ['dataset.created', 'dataset.*']) {
        const problem = expectProblem(
          await core.http.get('/v1/audit-log').query({ action }).set(admin.auth),
          400,
          'validation_failed',
        );
        expect(problem.errors).toEqual([
          { field: 'action', message: expect.not.stringContaining('dataset') },
        ]);
      }
      await core.http.get('/v1/audit-log').query({ action: 'key.created' }).set(admin.auth).expect(200);
      const refused = await core.http
        .post('/v1/webhooks')
        .set(admin.auth)
        .send({ url: 'http://127.0.0.1:9/hook', events: ['dataset.created'] });
      expect(expectProblem(refused, 400, 'validation_failed').errors?.map((e) => e.field)).toEqual([
        'events',
      ]);
      const document = (await core.http.get('/openapi.json').expect(200)).body;
      expect(enumOf(document, 'AuditActionFilter').filter((f) => f.startsWith('dataset'))).toEqual([]);
      expect(enumOf(document, 'WebhookEventType')).not.toContain('dataset.created');
      expect(document.webhooks['dataset.created']).toBeUndefined();
    } finally {
      await core.close();
    }
  });
});
