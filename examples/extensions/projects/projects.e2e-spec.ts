import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { ERROR_CATALOGUE } from '../../../src/common/domain-error';
import { STATUS_OF_KIND } from '../../../src/http/problem.filter';
import { waitFor } from '../../../test/support/agent-server';
import type { AuditEntry } from '../../../test/support/audit-log';
import { expectProblem, signUpOrganization, SignedUpOrganization } from '../../../test/support/factories';
import { createKey, CreatedKey } from '../../../test/support/keys';
import { CALLS_LOCAL_TARGETS } from '../../../test/support/outbound-targets';
import { readmeErrorTable } from '../../../test/support/readme-errors';
import { startTestApp, TestApp } from '../../../test/support/test-app';
import { verifyStandardWebhook, WebhookReceiver } from '../../../test/support/webhook-receiver';
import { projectsExtension } from './projects.extension';

/** The enum of one of the document's component schemas (AuditAction, AuditActionFilter, WebhookEventType). */
const enumOf = (document: { components: { schemas: Record<string, { enum: string[] }> } }, schema: string) =>
  document.components.schemas[schema].enum;

/** The fields a validation problem names, each once (a field may break several rules). */
const fieldsOf = (problem: { errors?: { field: string }[] }) => [
  ...new Set((problem.errors ?? []).map((e) => e.field)),
];

const PROJECT = {
  id: expect.stringMatching(/^prj_[0-9A-Za-z]{22}$/),
  created_at: expect.any(String),
  updated_at: expect.any(String),
};

/**
 * The projects resource, loaded as one line of an extension list would load it: a CRUD resource on the
 * extension surface alone (no file under src/ names it), over HTTP against the real app and database.
 */
describe('example extension: a CRUD resource on the extension surface alone (projects)', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  let viewer: CreatedKey;
  let developer: CreatedKey;
  beforeAll(async () => {
    // Webhook deliveries on, to the tests' own receiver on 127.0.0.1.
    t = await startTestApp({
      extensions: [projectsExtension],
      env: { ...CALLS_LOCAL_TARGETS, WEBHOOK_WORKERS: '1' },
    });
    org = await signUpOrganization(t.http, 'Projects');
    viewer = await createKey(t.http, org.auth, { role: 'viewer', type: 'service' });
    developer = await createKey(t.http, org.auth, { role: 'developer', type: 'service' });
  });
  afterAll(() => t?.close());

  const listAll = async (auth = viewer.auth) =>
    (await t.http.get('/v1/projects?limit=100').set(auth).expect(200)).body.data;
  const auditLog = async (query: Record<string, string>): Promise<AuditEntry[]> =>
    (
      await t.http
        .get('/v1/audit-log')
        .query({ ...query, limit: 100 })
        .set(org.auth)
        .expect(200)
    ).body.data;

  describe('create, read, update, delete', () => {
    it('creates a project with an id of its own prefix, reads it, changes it and deletes it', async () => {
      const created = await t.http
        .post('/v1/projects')
        .set(developer.auth)
        .send({ name: 'Checkout', description: 'the new checkout' })
        .expect(201);
      expect(created.body).toEqual({ ...PROJECT, name: 'Checkout', description: 'the new checkout' });
      expect(created.body.updated_at).toBe(created.body.created_at);
      const { id } = created.body;
      expect((await t.http.get(`/v1/projects/${id}`).set(viewer.auth).expect(200)).body).toEqual(
        created.body,
      );

      const renamed = await t.http
        .patch(`/v1/projects/${id}`)
        .set(developer.auth)
        .send({ name: 'Checkout v2' })
        .expect(200);
      expect(renamed.body).toEqual({ ...created.body, name: 'Checkout v2', updated_at: expect.any(String) });
      expect(Date.parse(renamed.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.body.created_at));
      const cleared = await t.http
        .patch(`/v1/projects/${id}`)
        .set(developer.auth)
        .send({ description: null })
        .expect(200);
      expect(cleared.body).toEqual({ ...renamed.body, description: null, updated_at: expect.any(String) });
      expect((await t.http.get(`/v1/projects/${id}`).set(viewer.auth).expect(200)).body).toEqual(
        cleared.body,
      );

      await t.http.delete(`/v1/projects/${id}`).set(developer.auth).expect(204);
      expectProblem(await t.http.get(`/v1/projects/${id}`).set(viewer.auth), 404, 'not_found');
      expectProblem(
        await t.http.patch(`/v1/projects/${id}`).set(developer.auth).send({ name: 'x' }),
        404,
        'not_found',
      );
      expectProblem(await t.http.delete(`/v1/projects/${id}`).set(developer.auth), 404, 'not_found');
      expect((await listAll()).map((p: { id: string }) => p.id)).not.toContain(id);
    });

    it('lists newest first in pages of ?limit, each page continuing from the last one’s next_cursor', async () => {
      const paged = await signUpOrganization(t.http, 'Paged');
      const names = ['First', 'Second', 'Third'];
      const created = [];
      for (const name of names)
        created.push((await t.http.post('/v1/projects').set(paged.auth).send({ name }).expect(201)).body);

      const first = await t.http.get('/v1/projects?limit=2').set(paged.auth).expect(200);
      expect(first.body).toEqual({ data: [created[2], created[1]], next_cursor: expect.any(String) });
      const second = await t.http
        .get('/v1/projects')
        .query({ limit: 2, cursor: first.body.next_cursor })
        .set(paged.auth)
        .expect(200);
      expect(second.body).toEqual({ data: [created[0]], next_cursor: null });
      // The default page holds them all.
      expect((await t.http.get('/v1/projects').set(paged.auth).expect(200)).body).toEqual({
        data: [created[2], created[1], created[0]],
        next_cursor: null,
      });
    });

    it('refuses a bad ?limit or ?cursor as every list does', async () => {
      for (const limit of ['0', '101', 'ten']) {
        const problem = expectProblem(
          await t.http.get('/v1/projects').query({ limit }).set(viewer.auth),
          400,
          'validation_failed',
        );
        expect(fieldsOf(problem)).toEqual(['limit']);
      }
      expectProblem(
        await t.http.get('/v1/projects').query({ cursor: 'not-a-cursor' }).set(viewer.auth),
        400,
        'invalid_cursor',
      );
    });
  });

  describe('bad input', () => {
    it('refuses an invalid project with 400 naming the field, and writes nothing', async () => {
      const existing = (
        await t.http.post('/v1/projects').set(developer.auth).send({ name: 'Untouched' }).expect(201)
      ).body;
      const projectsBefore = await listAll();
      const auditBefore = await auditLog({ action: 'project.*' });

      const refusedCreates: [Record<string, unknown>, string][] = [
        [{}, 'name'],
        [{ name: '   ' }, 'name'],
        [{ name: 'x'.repeat(101) }, 'name'],
        [{ name: 'bell\u0007' }, 'name'],
        [{ name: 42 }, 'name'],
        [{ name: 'Fine', description: 'x'.repeat(501) }, 'description'],
        [{ name: 'Fine', owner: 'someone' }, 'owner'],
      ];
      for (const [body, field] of refusedCreates) {
        const refused = await t.http.post('/v1/projects').set(developer.auth).send(body);
        expect(fieldsOf(expectProblem(refused, 400, 'validation_failed'))).toEqual([field]);
      }
      for (const [body, field] of [
        [{ name: null }, 'name'],
        [{ name: '' }, 'name'],
        [{ id: 'prj_other' }, 'id'],
      ] as const) {
        const refused = await t.http.patch(`/v1/projects/${existing.id}`).set(developer.auth).send(body);
        expect(fieldsOf(expectProblem(refused, 400, 'validation_failed'))).toEqual([field]);
      }

      expect(await listAll()).toEqual(projectsBefore);
      expect(await auditLog({ action: 'project.*' })).toEqual(auditBefore);
    });

    it('answers 409 project_name_taken for a name the organization has, on create and on rename', async () => {
      const taken = (
        await t.http.post('/v1/projects').set(developer.auth).send({ name: 'Taken' }).expect(201)
      ).body;
      const other = (
        await t.http.post('/v1/projects').set(developer.auth).send({ name: 'Other' }).expect(201)
      ).body;
      const auditBefore = await auditLog({ action: 'project.*' });

      const duplicate = await t.http.post('/v1/projects').set(developer.auth).send({ name: 'Taken' });
      expect(expectProblem(duplicate, 409, 'project_name_taken').detail).toContain('Taken');
      const rename = await t.http
        .patch(`/v1/projects/${other.id}`)
        .set(developer.auth)
        .send({ name: 'Taken' });
      expectProblem(rename, 409, 'project_name_taken');
      expect((await t.http.get(`/v1/projects/${other.id}`).set(viewer.auth).expect(200)).body).toEqual(other);
      expect((await listAll()).filter((p: { name: string }) => p.name === 'Taken')).toEqual([taken]);
      expect(await auditLog({ action: 'project.*' })).toEqual(auditBefore);

      // Keeping its own name is no conflict; another organization may use the name.
      await t.http.patch(`/v1/projects/${taken.id}`).set(developer.auth).send({ name: 'Taken' }).expect(200);
      const elsewhere = await signUpOrganization(t.http, 'Elsewhere');
      await t.http.post('/v1/projects').set(elsewhere.auth).send({ name: 'Taken' }).expect(201);
    });

    it('lets only one of two racing creates of one name through (the unique index decides)', async () => {
      const answers = await Promise.all(
        [1, 2].map(() => t.http.post('/v1/projects').set(developer.auth).send({ name: 'Raced' })),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
      expectProblem(
        answers.find((a) => a.status === 409)!,
        409,
        'project_name_taken',
      );
      expect((await listAll()).filter((p: { name: string }) => p.name === 'Raced')).toHaveLength(1);
    });
  });

  describe('permissions', () => {
    it('grants what its declaration gives the built-in roles, and refuses the rest with the core’s codes', async () => {
      const mine = (
        await t.http.post('/v1/projects').set(developer.auth).send({ name: 'Guarded' }).expect(201)
      ).body;
      expectProblem(await t.http.post('/v1/projects').set(viewer.auth).send({ name: 'x' }), 403, 'forbidden');
      expectProblem(
        await t.http.patch(`/v1/projects/${mine.id}`).set(viewer.auth).send({ name: 'x' }),
        403,
        'forbidden',
      );
      expectProblem(await t.http.delete(`/v1/projects/${mine.id}`).set(viewer.auth), 403, 'forbidden');
      expectProblem(await t.http.get('/v1/projects'), 401, 'missing_credentials');
      expect((await t.http.get(`/v1/projects/${mine.id}`).set(viewer.auth).expect(200)).body).toEqual(mine);
      expect((await listAll()).map((p: { name: string }) => p.name)).not.toContain('x');

      const verified = await t.http.get('/v1/auth/verify').set(developer.auth).expect(200);
      expect(verified.body.permissions).toEqual(
        expect.arrayContaining(['projects:create', 'projects:read', 'projects:update', 'projects:delete']),
      );
      const roles = Object.fromEntries(
        await Promise.all(
          ['viewer', 'developer', 'api_manager', 'administrator'].map(async (role) => [
            role,
            (await t.http.get(`/v1/roles/${role}`).set(org.auth).expect(200)).body.permissions.projects,
          ]),
        ),
      );
      expect(roles).toEqual({
        viewer: ['read'],
        developer: ['create', 'delete', 'read', 'update'],
        api_manager: ['read'],
        administrator: ['create', 'delete', 'read', 'update'],
      });
    });

    it('is in the permission catalogue with its four actions, and a custom role can hold some of them', async () => {
      const catalogue = await t.http.get('/v1/permissions').set(viewer.auth).expect(200);
      expect(catalogue.body.data).toContainEqual({
        resource: 'projects',
        actions: ['create', 'read', 'update', 'delete'],
      });
      const role = await t.http
        .post('/v1/roles')
        .set(org.auth)
        .send({ role_name: 'project_editor', permissions: { projects: ['read', 'update'] } })
        .expect(201);
      expect(role.body.permissions).toEqual({ projects: ['read', 'update'] });
      const refused = await t.http
        .post('/v1/roles')
        .set(org.auth)
        .send({ role_name: 'project_runner', permissions: { projects: ['execute'] } });
      expectProblem(refused, 400, 'validation_failed');

      const editor = await createKey(t.http, org.auth, { role: 'project_editor', type: 'service' });
      const mine = (
        await t.http.post('/v1/projects').set(developer.auth).send({ name: 'Edited' }).expect(201)
      ).body;
      await t.http
        .patch(`/v1/projects/${mine.id}`)
        .set(editor.auth)
        .send({ description: 'by the editor' })
        .expect(200);
      expectProblem(
        await t.http.post('/v1/projects').set(editor.auth).send({ name: 'New' }),
        403,
        'forbidden',
      );
      expectProblem(await t.http.delete(`/v1/projects/${mine.id}`).set(editor.auth), 403, 'forbidden');
      expectProblem(await t.http.get('/v1/agents').set(editor.auth), 403, 'forbidden');
    });
  });

  it("answers 404 for another organization's project, whatever the method, and leaves it as it was", async () => {
    const other = await signUpOrganization(t.http, 'Other');
    const theirs = (await t.http.post('/v1/projects').set(other.auth).send({ name: 'Theirs' }).expect(201))
      .body;
    expectProblem(await t.http.get(`/v1/projects/${theirs.id}`).set(developer.auth), 404, 'not_found');
    expectProblem(
      await t.http.patch(`/v1/projects/${theirs.id}`).set(developer.auth).send({ name: 'Mine now' }),
      404,
      'not_found',
    );
    expectProblem(await t.http.delete(`/v1/projects/${theirs.id}`).set(developer.auth), 404, 'not_found');
    expect(await listAll(developer.auth)).not.toContainEqual(expect.objectContaining({ id: theirs.id }));
    expect((await t.http.get(`/v1/projects/${theirs.id}`).set(other.auth).expect(200)).body).toEqual(theirs);
    // An id of another kind, or no id at all: 404 too.
    expectProblem(await t.http.get(`/v1/projects/${org.organizationId}`).set(viewer.auth), 404, 'not_found');
    expectProblem(await t.http.get('/v1/projects/prj_').set(viewer.auth), 404, 'not_found');
  });

  it('has the table its entity describes: its migration ran, and TypeORM finds nothing left to change', async () => {
    const dataSource = t.app.get(DataSource);
    const pending = await dataSource.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((query) => query.query).filter((sql) => sql.includes('projects'))).toEqual(
      [],
    );
    expect(
      await dataSource.query<{ name: string }[]>(
        `SELECT name FROM migrations WHERE name = 'Projects1796186586573'`,
      ),
    ).toEqual([{ name: 'Projects1796186586573' }]);
  });

  it("documents every code it declares in its own README's Errors table, with the status it answers", () => {
    const declared = Object.entries(ERROR_CATALOGUE.get('projects') ?? {}).map(
      ([code, kind]) => [code, STATUS_OF_KIND[kind]] as const,
    );
    expect(declared).toEqual([
      ['not_found', 404],
      ['project_name_taken', 409],
    ]);
    expect([...readmeErrorTable(join(__dirname, 'README.md')).entries()]).toEqual(declared);
  });

  describe('audit actions and a webhook event of its own, declared by its module', () => {
    it('records its create, update and delete in the audit log, and ?action= finds them', async () => {
      const created = await t.http
        .post('/v1/projects')
        .set(developer.auth)
        .send({ name: 'Audited' })
        .expect(201);
      const id = created.body.id;
      await t.http
        .patch(`/v1/projects/${id}`)
        .set(developer.auth)
        .send({ name: 'Audited', description: 'changed' })
        .expect(200);
      // A PATCH that gives no field changes nothing, and records nothing.
      await t.http.patch(`/v1/projects/${id}`).set(developer.auth).send({}).expect(200);
      await t.http.delete(`/v1/projects/${id}`).set(developer.auth).expect(204);

      const actor = { type: 'api_key', id: developer.id };
      const ofThisProject = (entries: AuditEntry[]) => entries.filter((e) => e.details.project_id === id);
      const group = ofThisProject(await auditLog({ action: 'project.*' }));
      expect(group.map(({ action, actor, details }) => ({ action, actor, details }))).toEqual([
        { action: 'project.deleted', actor, details: { project_id: id, name: 'Audited' } },
        { action: 'project.updated', actor, details: { project_id: id, fields: ['description', 'name'] } },
        { action: 'project.created', actor, details: { project_id: id, name: 'Audited' } },
      ]);
      for (const action of ['project.created', 'project.updated', 'project.deleted']) {
        expect(ofThisProject(await auditLog({ action })).map((e) => e.action)).toEqual([action]);
      }
      // Beside the core's: a core filter still finds only its own.
      expect((await auditLog({ action: 'key.*' })).every((e) => e.action.startsWith('key.'))).toBe(true);
    });

    // The problem's message lists the declared actions, cut at 160 bytes: `project.*` sorts past the cut,
    // so the OpenAPI enums below are where its own are seen among the rest.
    it('still refuses an action nobody declared with 400 naming the field', async () => {
      for (const action of ['project.exploded', 'projects.*', 'project.']) {
        const problem = expectProblem(
          await t.http.get('/v1/audit-log').query({ action }).set(org.auth),
          400,
          'validation_failed',
        );
        expect(fieldsOf(problem)).toEqual(['action']);
      }
    });

    it('is in the OpenAPI document: its paths, the audit enums, the webhook event types and the webhooks section', async () => {
      const document = (await t.http.get('/openapi.json').expect(200)).body;
      expect(Object.keys(document.paths)).toEqual(
        expect.arrayContaining(['/v1/projects', '/v1/projects/{id}']),
      );
      expect(Object.keys(document.paths['/v1/projects']).sort()).toEqual(['get', 'post']);
      expect(Object.keys(document.paths['/v1/projects/{id}']).sort()).toEqual(['delete', 'get', 'patch']);
      expect(enumOf(document, 'AuditAction')).toEqual(
        expect.arrayContaining(['project.created', 'project.updated', 'project.deleted', 'key.created']),
      );
      expect(enumOf(document, 'AuditActionFilter')).toEqual(
        expect.arrayContaining(['project.created', 'project.*', 'key.*']),
      );
      expect(enumOf(document, 'WebhookEventType')).toEqual(
        expect.arrayContaining(['project.created', 'key.created']),
      );
      expect(enumOf(document, 'WebhookEventType')).not.toContain('project.updated');
      const body = document.webhooks['project.created'].post.requestBody.content['application/json'].schema;
      expect(body.properties.data).toEqual({ $ref: '#/components/schemas/ProjectCreatedData' });
      expect(document.components.schemas.ProjectCreatedData.required).toEqual(
        expect.arrayContaining(['project_id', 'name', 'actor']),
      );
    });

    it('accepts project.created in a subscription and delivers it, signed as every event', async () => {
      const receiver = await WebhookReceiver.start();
      try {
        const webhook = await t.http
          .post('/v1/webhooks')
          .set(org.auth)
          .send({ url: receiver.url('/projects'), events: ['project.created'] })
          .expect(201);
        expect(webhook.body.events).toEqual(['project.created']);
        const created = await t.http
          .post('/v1/projects')
          .set(developer.auth)
          .send({ name: 'Hooked' })
          .expect(201);

        const delivered = await waitFor(
          () => receiver.at('/projects').find((r) => r.json?.data?.project_id === created.body.id),
          (found) => found !== undefined,
          { timeoutMs: 20_000 },
        );
        expect(delivered?.json).toEqual({
          type: 'project.created',
          timestamp: expect.any(String),
          data: { project_id: created.body.id, name: 'Hooked', actor: { type: 'api_key', id: developer.id } },
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
        .send({ url: 'http://127.0.0.1:9/hook', events: ['project.created', 'project.deleted'] });
      expect(fieldsOf(expectProblem(refused, 400, 'validation_failed'))).toEqual(['events']);
    });
  });

  // The core alone: with the examples in the deployment's list (CI), every other app has this one.
  it('is unknown to an app that does not load it: no route, no action, no event', async () => {
    const core = await startTestApp({ core: true });
    try {
      const admin = await signUpOrganization(core.http, 'Core only');
      expectProblem(await core.http.get('/v1/projects').set(admin.auth), 404);
      expectProblem(
        await core.http.get('/v1/audit-log').query({ action: 'project.created' }).set(admin.auth),
        400,
        'validation_failed',
      );
      const refused = await core.http
        .post('/v1/webhooks')
        .set(admin.auth)
        .send({ url: 'http://127.0.0.1:9/hook', events: ['project.created'] });
      expect(expectProblem(refused, 400, 'validation_failed').errors?.map((e) => e.field)).toEqual([
        'events',
      ]);
      const document = (await core.http.get('/openapi.json').expect(200)).body;
      expect(Object.keys(document.paths)).not.toContain('/v1/projects');
    } finally {
      await core.close();
    }
  });
});
