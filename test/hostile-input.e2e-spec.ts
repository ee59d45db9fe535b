import {
  expectProblem,
  listAll,
  sendAsIs,
  SignedUpOrganization,
  signUpOrganization,
  uniqueEmail,
} from './support/factories';
import type { Response } from 'supertest';
import { createKey, CreatedKey } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Hostile or careless input (contract, "Errors, lists, operations"): bodies nested too deep, lone
 * UTF-16 surrogates, `null` for a field that cannot be null, `__proto__`/`constructor` keys, names of
 * only whitespace, a charset other than UTF-8, bytes that are not UTF-8, bodies with more members
 * than any request needs, arrays or text where an object belongs. Each answers a small 4xx problem and
 * writes nothing: the resource reads the same afterwards and the audit log has no new entry.
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
  // last_used_at and last_used_ip record the key's use, written off the request path a moment after an
  // earlier test used it: not something a refused write could have changed.
  const read = async (path: string): Promise<unknown> => {
    const {
      last_used_at: _usedAt,
      last_used_ip: _usedIp,
      ...body
    } = (await t.http.get(path).set(org.auth).expect(200)).body as Record<string, unknown>;
    return body;
  };
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

  /** A problem answer small enough that refusing the body cost no more than reading it. */
  function expectSmallProblem(res: Response, status: number, code?: string) {
    const problem = expectProblem(res, status, code);
    expect(Buffer.byteLength(res.text)).toBeLessThan(8 * 1024);
    return problem;
  }

  const properties = (count: number, prefix = 'p'): string =>
    `{${Array.from({ length: count }, (_, i) => `"${prefix}${i}":1`).join(',')}}`;

  describe('more members than any request needs → 413 json_too_large, a small answer, nothing written', () => {
    it.each([
      ['60,000 properties', () => properties(60_000)],
      ['20,000 properties', () => properties(20_000)],
      ['a 60,000-item array', () => `{"email":[${'1,'.repeat(59_999)}1]}`],
      [
        '60,000 unknown properties one level down',
        () => `{"email":"a@example.test","password":"x","extra":${properties(60_000)}}`,
      ],
    ])(
      '%s to POST /v1/auth/token (no credential), while verify on the same instance answers',
      async (_case, body) => {
        const [hostile, verify] = await Promise.all([
          t.http.post('/v1/auth/token').set('Content-Type', 'application/json').send(body()),
          t.http.get('/v1/auth/verify').set(key.auth),
        ]);
        expectSmallProblem(hostile, 413, 'json_too_large');
        expect(verify.status).toBe(200);
        expect(verify.body).toEqual(expect.objectContaining({ valid: true, key_id: key.id }));
      },
    );

    it('1,001 properties in a PATCH → 413, the key unchanged', async () => {
      await expectNothingWritten([`/v1/api-keys/${key.id}`], async () => {
        const body = `{"name":"many",${properties(1_000).slice(1)}`;
        expectSmallProblem(await sendRaw('patch', `/v1/api-keys/${key.id}`, body), 413, 'json_too_large');
      });
    });

    it('21 objects of 1,000 properties (21,000 members in all) → 413', async () => {
      const objects = Array.from({ length: 21 }, (_, i) => `"o${i}":${properties(999)}`);
      const res = await sendAsIs(t.http.post('/v1/auth/token'), `{${objects.join(',')}}`);
      expectSmallProblem(res, 413, 'json_too_large');
    });

    it('1,000 unknown properties (the limit) reach validation: 400 with 20 errors at most', async () => {
      const res = await sendAsIs(t.http.post('/v1/auth/token'), properties(1_000));
      const problem = expectSmallProblem(res, 400, 'validation_failed');
      expect(problem.errors).toHaveLength(20);
      expect(problem.detail).toMatch(/more/);
    });

    it('an unknown property with a name of 100,000 characters: the answer echoes a few KiB at most', async () => {
      const res = await sendAsIs(
        t.http.post('/v1/auth/token'),
        `{"${'n'.repeat(100_000)}":1,"email":"a@example.test","password":"x"}`,
      );
      const problem = expectSmallProblem(res, 400, 'validation_failed');
      expect(problem.errors).toEqual([
        { field: expect.stringMatching(/^n+…$/), message: expect.stringMatching(/^n+…$/) },
      ]);
    });

    it('an upload with 1,000 form fields → 4xx, a small answer, no file kept', async () => {
      const files = await count('/v1/files');
      let upload = t.http.post('/v1/files').set(org.auth);
      for (let i = 0; i < 1_000; i++) upload = upload.field(`f${i}`, 'x');
      const res = await upload.attach('file', Buffer.from('hello'), 'hello.txt');
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expectSmallProblem(res, res.status);
      expect(await count('/v1/files')).toBe(files);
    });
  });

  describe('bytes that are not UTF-8 → 400 invalid_unicode, nothing written', () => {
    const jsonWith = (prefix: string, bytes: number[], suffix: string): Buffer =>
      Buffer.concat([Buffer.from(prefix, 'utf8'), Buffer.from(bytes), Buffer.from(suffix, 'utf8')]);

    it.each([
      ['a lone continuation byte', [0x80]],
      ['a truncated sequence', [0xc3, 0x28]],
      ['an overlong "/"', [0xc0, 0xaf]],
      ['a UTF-16 surrogate encoded as UTF-8', [0xed, 0xa0, 0x80]],
      ['0xFF', [0xff]],
    ])('%s in a key name', async (_case, bytes) => {
      const keys = await count('/v1/api-keys');
      await expectNothingWritten([], async () => {
        const res = await sendAsIs(
          t.http.post('/v1/api-keys').set(org.auth),
          jsonWith('{"name":"bad ', bytes, ' name","role":"viewer"}'),
        );
        expectSmallProblem(res, 400, 'invalid_unicode');
      });
      expect(await count('/v1/api-keys')).toBe(keys);
    });

    it('in a form-encoded body', async () => {
      const keys = await count('/v1/api-keys');
      const res = await sendAsIs(
        t.http.post('/v1/api-keys').set(org.auth),
        jsonWith('name=bad', [0xff], 'name&role=viewer'),
        'application/x-www-form-urlencoded',
      );
      expectSmallProblem(res, 400, 'invalid_unicode');
      expect(await count('/v1/api-keys')).toBe(keys);
    });

    it('at signup (no credential)', async () => {
      const res = await sendAsIs(
        t.http.post('/v1/auth/signup'),
        jsonWith(
          '{"organization_name":"Latin',
          [0xe9],
          `","email":"${uniqueEmail('latin')}","password":"correct-horse-battery","name":"L"}`,
        ),
      );
      expectSmallProblem(res, 400, 'invalid_unicode');
    });

    it('valid multi-byte UTF-8 is text like any other', async () => {
      const res = await sendAsIs(
        t.http.post('/v1/api-keys').set(org.auth),
        Buffer.from('{"name":"café 😀","role":"viewer"}', 'utf8'),
      );
      expect(res.status).toBe(201);
      expect(res.body.name).toBe('café 😀');
    });
  });

  describe('?api_key= works on every route, query parameters of the route validated as before', () => {
    it.each([
      ['/v1/agents', { limit: 5 }],
      ['/v1/tasks', { status: 'queued' }],
      ['/v1/files', { limit: 1 }],
      ['/v1/agents', {}],
    ])('GET %s %j', async (path, query) => {
      const res = await t.http.get(path).query({ ...query, api_key: key.key });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(expect.objectContaining({ data: expect.any(Array) }));
    });

    it('another unknown parameter beside it is still refused, and only that one is named', async () => {
      const res = await t.http.get('/v1/agents').query({ api_key: key.key, bogus: '1' });
      const problem = expectProblem(res, 400, 'validation_failed');
      expect(problem.errors).toEqual([{ field: 'bogus', message: 'bogus is not allowed' }]);
    });
  });

  describe('an array, text or number where an object belongs → 400 validation_failed naming the field', () => {
    const NESTED: [string, (value: unknown) => Record<string, unknown>][] = [
      ['credits', (value) => ({ credits: value })],
      ['credits.refill', (value) => ({ credits: { remaining: 10, refill: value } })],
      ['rate_limit', (value) => ({ rate_limit: value })],
      ['rotation_policy', (value) => ({ rotation_policy: value })],
      ['meta', (value) => ({ meta: value })],
    ];
    const NOT_OBJECTS: unknown[] = [[], [{}], 'x', 1, true];
    const CASES = NESTED.flatMap(([field, body]) =>
      NOT_OBJECTS.map((value) => [field, JSON.stringify(value), body(value)] as const),
    );

    const expectFieldNamed = (res: Response, field: string): void => {
      const problem = expectProblem(res, 400, 'validation_failed');
      expect(problem.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    };

    it.each(CASES)('POST /v1/api-keys with %s: %s, no key created', async (field, _shown, body) => {
      const keys = await count('/v1/api-keys');
      await expectNothingWritten([], async () => {
        const res = await t.http
          .post('/v1/api-keys')
          .set(org.auth)
          .send({ name: 'not an object', role: 'viewer', ...body });
        expectFieldNamed(res, field);
      });
      expect(await count('/v1/api-keys')).toBe(keys);
    });

    it.each(CASES)('PATCH /v1/api-keys/{id} with %s: %s, the key unchanged', async (field, _shown, body) => {
      await expectNothingWritten([`/v1/api-keys/${key.id}`], async () => {
        expectFieldNamed(await t.http.patch(`/v1/api-keys/${key.id}`).set(org.auth).send(body), field);
      });
    });

    const OTHER_DTOS: [string, 'post' | 'patch', () => string, object, string][] = [
      ['POST /v1/agents', 'post', () => '/v1/agents', { name: 'a', type: 'http', config: [] }, 'config'],
      ['PATCH /v1/agents/{id}', 'patch', () => `/v1/agents/${agent.id}`, { config: ['x'] }, 'config'],
      ['POST /v1/roles', 'post', () => '/v1/roles', { role_name: 'listed', permissions: [] }, 'permissions'],
    ];

    it.each(OTHER_DTOS)('%s', async (_case, method, path, body, field) => {
      const agents = await count('/v1/agents');
      const roles = await count('/v1/roles');
      await expectNothingWritten([`/v1/agents/${agent.id}`], async () => {
        expectFieldNamed(await t.http[method](path()).set(org.auth).send(body), field);
      });
      expect([await count('/v1/agents'), await count('/v1/roles')]).toEqual([agents, roles]);
    });
  });
});
