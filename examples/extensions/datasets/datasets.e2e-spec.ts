import { DataSource } from 'typeorm';
import { expectProblem, signUpOrganization, SignedUpOrganization } from '../../../test/support/factories';
import { createKey, CreatedKey } from '../../../test/support/keys';
import { startTestApp, TestApp } from '../../../test/support/test-app';
import { datasetsExtension } from './datasets.extension';

/** The datasets resource, loaded as one line of an extension list would load it. */
describe('example extension: a resource with permissions, a table and routes (datasets)', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  let viewer: CreatedKey;
  let developer: CreatedKey;
  beforeAll(async () => {
    t = await startTestApp({ extensions: [datasetsExtension] });
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
});
