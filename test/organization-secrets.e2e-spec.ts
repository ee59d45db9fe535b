import pino from 'pino';
import { DataSource } from 'typeorm';
import { REQUEST_LOGGER } from '../src/logging/request-logger';
import { SecretBox } from '../src/secrets/secret-box';
import { OrganizationSecrets } from '../src/organization-secrets/organization-secrets';
import { SecretReferences } from '../src/organization-secrets/secret-references';
import { expectProblem, SignedUpOrganization, signUpOrganization } from './support/factories';
import { Auth, createKey } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRET_ID = /^sec_[0-9A-Za-z]{22}$/;

let counter = 0;
const uniqueName = (label = 'secret'): string => `${label}-${Date.now().toString(36)}-${++counter}`;
// Values no other text of a run could hold by chance, so finding one anywhere means it leaked.
const uniqueValue = (label = 'sk'): string =>
  `${label}-VALUE-${Date.now().toString(36)}-zQ9x${String(++counter).padStart(4, '0')}`;

describe('organization secrets', () => {
  let t: TestApp;
  let a: SignedUpOrganization;
  let b: SignedUpOrganization;
  // Every line the app's pino writes (request lines and application logs), captured at debug.
  const logLines: string[] = [];
  const usedSecrets = new Set<string>();

  beforeAll(async () => {
    t = await startTestApp({ env: { LOG_LEVEL: 'debug' } });
    const logger = t.app.get<pino.Logger>(REQUEST_LOGGER);
    const stream = (logger as unknown as Record<symbol, { write(line: string): boolean }>)[
      pino.symbols.streamSym
    ];
    stream.write = (line: string) => {
      logLines.push(String(line));
      return true;
    };
    t.app.get(SecretReferences).register(async (_organizationId, secretId) => usedSecrets.has(secretId));
    a = await signUpOrganization(t.http, 'Secrets A');
    b = await signUpOrganization(t.http, 'Secrets B');
  });
  afterAll(() => t.close());

  const createSecret = async (auth: Auth, body: Record<string, unknown> = {}) => {
    const res = await t.http
      .post('/v1/secrets')
      .set(auth)
      .send({ name: uniqueName(), value: uniqueValue(), ...body });
    expect(res.status).toBe(201);
    return res.body as Record<string, any>;
  };

  const rowsOf = (organizationId: string): Promise<Array<Record<string, any>>> =>
    t.app
      .get(DataSource)
      .query(`SELECT * FROM organization_secrets WHERE organization_id = $1`, [organizationId]);

  const auditOf = async (auth: Auth, secretId: string) => {
    const res = await t.http
      .get('/v1/audit-log')
      .query({ action: 'secret.*', limit: 100 })
      .set(auth)
      .expect(200);
    return (res.body.data as Array<Record<string, any>>).filter(
      (entry) => entry.details.secret_id === secretId,
    );
  };

  it('creates, lists, reads, renames, replaces and deletes a secret, never showing the value', async () => {
    const value = uniqueValue('sk-live');
    const name = uniqueName();
    const created = await t.http.post('/v1/secrets').set(a.auth).send({ name, value });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(SECRET_ID),
      name,
      last4: value.slice(-4),
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      last_used_at: null,
    });
    const id = created.body.id;

    const read = await t.http.get(`/v1/secrets/${id}`).set(a.auth).expect(200);
    expect(read.body).toEqual(created.body);
    const list = await t.http.get('/v1/secrets').set(a.auth).expect(200);
    expect(list.body).toEqual({ data: expect.arrayContaining([created.body]), next_cursor: null });

    const renamed = await t.http
      .patch(`/v1/secrets/${id}`)
      .set(a.auth)
      .send({ name: `${name}-renamed` })
      .expect(200);
    expect(renamed.body).toMatchObject({ id, name: `${name}-renamed`, last4: value.slice(-4) });

    const replacement = uniqueValue('sk-next');
    const replaced = await t.http
      .patch(`/v1/secrets/${id}`)
      .set(a.auth)
      .send({ value: replacement })
      .expect(200);
    expect(replaced.body.last4).toBe(replacement.slice(-4));
    expect(replaced.body.last4).not.toBe(value.slice(-4));
    expect(new Date(replaced.body.updated_at).getTime()).toBeGreaterThan(
      new Date(created.body.updated_at).getTime(),
    );
    expect(await t.app.get(OrganizationSecrets).reveal(a.organizationId, id)).toBe(replacement);

    const audit = await auditOf(a.auth, id);
    expect(audit.map((entry) => entry.action).sort()).toEqual([
      'secret.created',
      'secret.updated',
      'secret.updated',
    ]);
    expect(audit.find((entry) => entry.details.fields?.includes('value'))?.details).toEqual({
      secret_id: id,
      name: `${name}-renamed`,
      fields: ['value'],
    });

    await t.http.delete(`/v1/secrets/${id}`).set(a.auth).expect(204);
    expectProblem(await t.http.get(`/v1/secrets/${id}`).set(a.auth), 404, 'not_found');
    expect((await auditOf(a.auth, id)).map((entry) => entry.action)).toContain('secret.deleted');

    // The redaction check: neither value appears in any response, log line or audit entry.
    const responses = JSON.stringify([created.body, read.body, list.body, renamed.body, replaced.body]);
    const auditText = JSON.stringify(
      (await t.http.get('/v1/audit-log').query({ limit: 100 }).set(a.auth)).body,
    );
    expect(logLines.length).toBeGreaterThan(0);
    for (const secretValue of [value, replacement]) {
      expect(responses).not.toContain(secretValue);
      expect(auditText).not.toContain(secretValue);
      expect(logLines.join('')).not.toContain(secretValue);
    }
  });

  it('keeps last4 null for a value shorter than 16 characters', async () => {
    const secret = await createSecret(a.auth, { value: 'short-value-15c' });
    expect(secret.last4).toBeNull();
  });

  it('stores the value sealed, opening with the organization-secrets box', async () => {
    const value = uniqueValue();
    const secret = await createSecret(a.auth, { value });
    const [row] = (await rowsOf(a.organizationId)).filter((candidate) => candidate.id === secret.id);
    expect(row.sealed_value).not.toContain(value);
    expect(JSON.stringify(row)).not.toContain(value);
    expect(new SecretBox(t.config.API_KEY_HASH_SECRET, 'organization-secrets').open(row.sealed_value)).toBe(
      value,
    );
    expect(() =>
      new SecretBox(t.config.API_KEY_HASH_SECRET, 'webhook-secrets').open(row.sealed_value),
    ).toThrow();
  });

  it('answers 409 secret_name_taken for a taken name, on create and on rename', async () => {
    const first = await createSecret(a.auth);
    const second = await createSecret(a.auth);
    const before = (await rowsOf(a.organizationId)).length;
    expectProblem(
      await t.http.post('/v1/secrets').set(a.auth).send({ name: first.name, value: uniqueValue() }),
      409,
      'secret_name_taken',
    );
    expectProblem(
      await t.http.patch(`/v1/secrets/${second.id}`).set(a.auth).send({ name: first.name }),
      409,
      'secret_name_taken',
    );
    expect((await rowsOf(a.organizationId)).length).toBe(before);
    // Another organization may use the same name.
    await createSecret(b.auth, { name: first.name });
  });

  it('answers 409 secret_in_use while something names the secret', async () => {
    const secret = await createSecret(a.auth);
    usedSecrets.add(secret.id);
    expectProblem(await t.http.delete(`/v1/secrets/${secret.id}`).set(a.auth), 409, 'secret_in_use');
    await t.http.get(`/v1/secrets/${secret.id}`).set(a.auth).expect(200);
    usedSecrets.delete(secret.id);
    await t.http.delete(`/v1/secrets/${secret.id}`).set(a.auth).expect(204);
  });

  it.each([
    ['no name', { value: 'v' }, 'name'],
    ['an empty name', { name: '', value: 'v' }, 'name'],
    ['a name over 100 characters', { name: 'n'.repeat(101), value: 'v' }, 'name'],
    ['no value', { name: 'n' }, 'value'],
    ['an empty value', { name: 'n', value: '' }, 'value'],
    ['a value over 8192 characters', { name: 'n', value: 'v'.repeat(8193) }, 'value'],
    ['a number for value', { name: 'n', value: 42 }, 'value'],
  ])('refuses %s with 400 and writes nothing', async (_label, body, field) => {
    const before = (await rowsOf(a.organizationId)).length;
    const problem = expectProblem(await t.http.post('/v1/secrets').set(a.auth).send(body), 400);
    expect(problem.errors?.map((error) => error.field)).toContain(field);
    expect((await rowsOf(a.organizationId)).length).toBe(before);
  });

  it('refuses a PATCH with a null or oversized field, leaving the secret as it was', async () => {
    const secret = await createSecret(a.auth);
    expectProblem(await t.http.patch(`/v1/secrets/${secret.id}`).set(a.auth).send({ value: null }), 400);
    expectProblem(
      await t.http
        .patch(`/v1/secrets/${secret.id}`)
        .set(a.auth)
        .send({ name: 'n'.repeat(101) }),
      400,
    );
    expect((await t.http.get(`/v1/secrets/${secret.id}`).set(a.auth).expect(200)).body).toEqual(secret);
  });

  it('answers an empty PATCH with the secret as it is, writing no audit entry', async () => {
    const secret = await createSecret(a.auth);
    const res = await t.http.patch(`/v1/secrets/${secret.id}`).set(a.auth).send({}).expect(200);
    expect(res.body).toEqual(secret);
    expect((await auditOf(a.auth, secret.id)).map((entry) => entry.action)).toEqual(['secret.created']);
  });

  it("answers 404 for another organization's secret, and reveal and exists know nothing of it", async () => {
    const secret = await createSecret(b.auth);
    expectProblem(await t.http.get(`/v1/secrets/${secret.id}`).set(a.auth), 404, 'not_found');
    expectProblem(
      await t.http.patch(`/v1/secrets/${secret.id}`).set(a.auth).send({ name: 'x' }),
      404,
      'not_found',
    );
    expectProblem(await t.http.delete(`/v1/secrets/${secret.id}`).set(a.auth), 404, 'not_found');
    const list = await t.http.get('/v1/secrets').set(a.auth).expect(200);
    expect(list.body.data.map((item: { id: string }) => item.id)).not.toContain(secret.id);
    const secrets = t.app.get(OrganizationSecrets);
    expect(await secrets.reveal(a.organizationId, secret.id)).toBeUndefined();
    expect(await secrets.exists(a.organizationId, secret.id)).toBe(false);
    expect(await secrets.exists(b.organizationId, secret.id)).toBe(true);
    expect(await secrets.exists(b.organizationId, 'sec_nope')).toBe(false);
  });

  it('stamps last_used_at when a run opens the value', async () => {
    const value = uniqueValue();
    const secret = await createSecret(a.auth, { value });
    expect(await t.app.get(OrganizationSecrets).reveal(a.organizationId, secret.id)).toBe(value);
    const read = await t.http.get(`/v1/secrets/${secret.id}`).set(a.auth).expect(200);
    expect(read.body.last_used_at).toMatch(ISO);
    // Use is not a change of the secret.
    expect(read.body.updated_at).toBe(secret.updated_at);
  });

  it('allows administrator and api_manager keys, refuses viewer and developer keys', async () => {
    for (const role of ['administrator', 'api_manager']) {
      const key = await createKey(t.http, a.auth, { role });
      const secret = await createSecret(key.auth);
      await t.http.get('/v1/secrets').set(key.auth).expect(200);
      await t.http
        .patch(`/v1/secrets/${secret.id}`)
        .set(key.auth)
        .send({ name: uniqueName(role) })
        .expect(200);
      await t.http.delete(`/v1/secrets/${secret.id}`).set(key.auth).expect(204);
    }
    const existing = await createSecret(a.auth);
    for (const role of ['viewer', 'developer']) {
      const key = await createKey(t.http, a.auth, { role });
      expectProblem(await t.http.post('/v1/secrets').set(key.auth).send({ name: 'n', value: 'v' }), 403);
      expectProblem(await t.http.get('/v1/secrets').set(key.auth), 403);
      expectProblem(await t.http.get(`/v1/secrets/${existing.id}`).set(key.auth), 403);
      expectProblem(await t.http.patch(`/v1/secrets/${existing.id}`).set(key.auth).send({ name: 'x' }), 403);
      expectProblem(await t.http.delete(`/v1/secrets/${existing.id}`).set(key.auth), 403);
    }
  });
});
