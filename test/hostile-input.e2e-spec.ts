import {
  expectProblem,
  listAll,
  SignedUpOrganization,
  signUpOrganization,
  uniqueEmail,
} from './support/factories';
import { createKey, CreatedKey } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Hostile or careless input (contract, "Errors, lists, operations"): bodies nested too deep, lone
 * UTF-16 surrogates, `null` for a field that cannot be null, `__proto__`/`constructor` keys, names of
 * only whitespace, a charset other than UTF-8. Each answers a 4xx problem and writes nothing: the
 * resource reads the same afterwards and the audit log has no new entry.
 */
describe('hostile input', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  let key: CreatedKey;
  let user: { id: string };
  let agent: { id: string };
  let webhook: { id: string };

  beforeAll(async () => {
    t = await startTestApp({ env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true' } });
    org = await signUpOrganization(t.http, 'Hostile');
    key = await createKey(t.http, org.auth, {
      name: 'kept',
      role: 'developer',
      allowed_ips: ['0.0.0.0/0', '::/0'],
    });
    user = (
      await t.http
        .post('/v1/users')
        .set(org.auth)
        .send({ email: uniqueEmail('kept'), password: 'correct-horse-battery', name: 'Kept', role: 'viewer' })
        .expect(201)
    ).body;
    agent = (
      await t.http
        .post('/v1/agents')
        .set(org.auth)
        .send({ name: 'kept', type: 'http', config: { url: 'http://127.0.0.1:9/run' } })
        .expect(201)
    ).body;
    webhook = (
      await t.http
        .post('/v1/webhooks')
        .set(org.auth)
        .send({ url: 'http://127.0.0.1:9/hook', events: ['task.failed'] })
        .expect(201)
    ).body;
  });
  afterAll(() => t?.close());

  const auditCount = async (): Promise<number> => (await listAll(t.http, '/v1/audit-log', org.auth)).length;
  const read = async (path: string): Promise<unknown> =>
    (await t.http.get(path).set(org.auth).expect(200)).body;
  const count = async (path: string): Promise<number> => (await listAll(t.http, path, org.auth)).length;

  /** Runs `act` and checks the resources and the audit log read exactly as before. */
  async function expectNothingWritten(paths: string[], act: () => Promise<void>): Promise<void> {
    const before = await Promise.all(paths.map(read));
    const auditBefore = await auditCount();
    await act();
    expect(await Promise.all(paths.map(read))).toEqual(before);
    expect(await auditCount()).toBe(auditBefore);
  }

  const sendRaw = (method: 'post' | 'patch', path: string, body: string, contentType = 'application/json') =>
    t.http[method](path).set(org.auth).set('Content-Type', contentType).send(body);

  describe('JSON nested too deep', () => {
    const deep = (levels: number): string => `{"name":${'['.repeat(levels)}${']'.repeat(levels)}}`;

    it('100,000 levels to a public route → 400 json_too_deep, no stack overflow', async () => {
      const body = `{"email":${'['.repeat(100_000)}`;
      const res = await t.http.post('/v1/auth/signup').set('Content-Type', 'application/json').send(body);
      expectProblem(res, 400, 'json_too_deep');
    });

    it('33 levels in a PATCH → 400 json_too_deep, the key unchanged', async () => {
      await expectNothingWritten([`/v1/api-keys/${key.id}`], async () => {
        expectProblem(await sendRaw('patch', `/v1/api-keys/${key.id}`, deep(32)), 400, 'json_too_deep');
      });
    });

    it('32 levels are read and reach validation', async () => {
      // The body itself is one level; 31 arrays inside make 32.
      expectProblem(await sendRaw('patch', `/v1/api-keys/${key.id}`, deep(31)), 400, 'validation_failed');
    });
  });

  describe('null for a field that cannot be null → 400 validation_failed, nothing written', () => {
    it.each([
      ['keys', { name: null }, 'name', () => `/v1/api-keys/${key.id}`],
      ['keys', { role: null }, 'role', () => `/v1/api-keys/${key.id}`],
      ['keys', { allowed_ips: null }, 'allowed_ips', () => `/v1/api-keys/${key.id}`],
      ['users', { name: null }, 'name', () => `/v1/users/${user.id}`],
      ['users', { role: null }, 'role', () => `/v1/users/${user.id}`],
      ['users', { password: null }, 'password', () => `/v1/users/${user.id}`],
      ['agents', { name: null }, 'name', () => `/v1/agents/${agent.id}`],
      ['agents', { config: null }, 'config', () => `/v1/agents/${agent.id}`],
      ['webhooks', { enabled: null }, 'enabled', () => `/v1/webhooks/${webhook.id}`],
      ['webhooks', { events: null }, 'events', () => `/v1/webhooks/${webhook.id}`],
    ])('PATCH %s %j', async (_resource, body, field, path) => {
      await expectNothingWritten([path()], async () => {
        const res = await t.http.patch(path()).set(org.auth).send(body);
        const problem = expectProblem(res, 400, 'validation_failed');
        expect(problem.errors).toEqual(
          expect.arrayContaining([{ field, message: expect.stringContaining('null') }]),
        );
      });
    });

    it('a nullable field still takes null (a key description is cleared)', async () => {
      await t.http
        .patch(`/v1/api-keys/${key.id}`)
        .set(org.auth)
        .send({ description: 'temporary' })
        .expect(200);
      const cleared = await t.http
        .patch(`/v1/api-keys/${key.id}`)
        .set(org.auth)
        .send({ description: null })
        .expect(200);
      expect(cleared.body.description).toBeNull();
    });
  });

  describe('a lone UTF-16 surrogate → 400 invalid_unicode, nothing written', () => {
    it('in an email at signup (no credential)', async () => {
      const body = `{"organization_name":"Surrogate","email":"\\ud800x@example.test","password":"correct-horse-battery","name":"S"}`;
      const res = await t.http.post('/v1/auth/signup').set('Content-Type', 'application/json').send(body);
      expectProblem(res, 400, 'invalid_unicode');
    });

    it('in an email of a new user', async () => {
      const users = await count('/v1/users');
      await expectNothingWritten([], async () => {
        const body = `{"email":"\\ud800x@example.test","password":"correct-horse-battery","name":"S","role":"viewer"}`;
        expectProblem(await sendRaw('post', '/v1/users', body), 400, 'invalid_unicode');
      });
      expect(await count('/v1/users')).toBe(users);
    });

    it('in a key name', async () => {
      const keys = await count('/v1/api-keys');
      await expectNothingWritten([], async () => {
        expectProblem(
          await sendRaw('post', '/v1/api-keys', '{"name":"bad \\udc00 name","role":"viewer"}'),
          400,
          'invalid_unicode',
        );
      });
      expect(await count('/v1/api-keys')).toBe(keys);
    });

    it('a proper surrogate pair is text like any other', async () => {
      const res = await sendRaw('post', '/v1/api-keys', '{"name":"smile \\ud83d\\ude00","role":"viewer"}');
      expect(res.status).toBe(201);
      expect(res.body.name).toBe('smile 😀');
    });
  });

  describe('a __proto__ or constructor key → 400 reserved_key, nothing written', () => {
    it.each([
      ['{"name":"proto","role":"viewer","__proto__":{"role":"administrator"}}'],
      ['{"name":"ctor","role":"viewer","rate_limit":{"constructor":{"prototype":{}}}}'],
    ])('POST /v1/api-keys %s', async (body) => {
      const keys = await count('/v1/api-keys');
      await expectNothingWritten([], async () => {
        expectProblem(await sendRaw('post', '/v1/api-keys', body), 400, 'reserved_key');
      });
      expect(await count('/v1/api-keys')).toBe(keys);
    });
  });

  describe('a name of only whitespace → 400 validation_failed, nothing written', () => {
    it.each([
      ['/v1/api-keys', { name: ' \t ', role: 'viewer' }],
      [
        '/v1/users',
        { email: uniqueEmail('blank'), password: 'correct-horse-battery', name: '   ', role: 'viewer' },
      ],
      ['/v1/teams', { name: '\u00a0 ' }],
      ['/v1/agents', { name: '  ', type: 'echo' }],
    ])('POST %s', async (path, body) => {
      const listed = await count(path);
      await expectNothingWritten([], async () => {
        const problem = expectProblem(
          await t.http.post(path).set(org.auth).send(body),
          400,
          'validation_failed',
        );
        expect(problem.errors).toEqual(
          expect.arrayContaining([{ field: 'name', message: expect.any(String) }]),
        );
      });
      expect(await count(path)).toBe(listed);
    });

    it('PATCH /v1/api-keys/{id} with a blank name', async () => {
      await expectNothingWritten([`/v1/api-keys/${key.id}`], async () => {
        expectProblem(
          await t.http.patch(`/v1/api-keys/${key.id}`).set(org.auth).send({ name: '    ' }),
          400,
          'validation_failed',
        );
      });
    });
  });

  describe('a charset other than UTF-8 → 415 unsupported_charset, nothing written', () => {
    it.each(['utf-7', 'iso-8859-1', 'utf-16'])('charset=%s', async (charset) => {
      await expectNothingWritten([`/v1/api-keys/${key.id}`], async () => {
        const res = await sendRaw(
          'patch',
          `/v1/api-keys/${key.id}`,
          '{"name":"+AGEAYgBj-"}',
          `application/json; charset=${charset}`,
        );
        expectProblem(res, 415, 'unsupported_charset');
      });
    });

    it('charset=utf-8 is read', async () => {
      const res = await sendRaw(
        'patch',
        `/v1/api-keys/${key.id}`,
        '{"name":"renamed"}',
        'application/json; charset=UTF-8',
      );
      expect(res.status).toBe(200);
      expect(res.body.name).toBe('renamed');
    });
  });
});
