import { DataSource } from 'typeorm';
import { expectProblem, SignedUpOrganization, signUpOrganization, uniqueEmail } from './support/factories';
import { createKey } from './support/keys';
import { loadOpenApiMetadata } from './support/openapi-metadata';
import { startTestApp, TestApp } from './support/test-app';

/** PostgreSQL's `integer` column: one more than this is an overflow there (a 500), not a 400. */
const INT4_MAX = 2_147_483_647;
const TOO_BIG = 2 ** 31;

type Schema = Record<string, any>;
type Document = {
  paths: Record<string, Record<string, { parameters?: Schema[]; requestBody?: Schema }>>;
  components: { schemas: Record<string, Schema> };
};

/** Every schema under `root`, with its path (`CreateApiKeyDto.credits.refill.amount`), each once. */
function schemasUnder(document: Document, root: unknown, at: string, out: [string, Schema][] = []) {
  const seen = new Set<unknown>();
  const visit = (node: unknown, path: string): void => {
    if (!node || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    const schema = node as Schema;
    out.push([path, schema]);
    if (typeof schema.$ref === 'string') {
      visit(document.components.schemas[schema.$ref.replace('#/components/schemas/', '')], path);
    }
    for (const [name, property] of Object.entries((schema.properties as Schema) ?? {})) {
      visit(property, `${path}.${name}`);
    }
    visit(schema.items, `${path}[]`);
    visit(schema.additionalProperties, `${path}{}`);
    for (const keyword of ['allOf', 'anyOf', 'oneOf']) {
      for (const branch of (schema[keyword] as unknown[]) ?? []) visit(branch, path);
    }
  };
  visit(root, at);
  return out;
}

const types = (schema: Schema): string[] =>
  Array.isArray(schema.type) ? schema.type : typeof schema.type === 'string' ? [schema.type] : [];

/**
 * Issue 41: integers reached PostgreSQL unbounded (a refill amount of 2^31 was a 500), and integer-only
 * fields were documented as `number`. Names took ANSI escapes and other control characters into logs,
 * the dashboard and CSV exports.
 */
describe('input bounds', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  let document: Document;

  // Generous deadlines: the plugin's metadata reads the whole program once per run, which on a busy
  // machine takes minutes; nothing here is about speed.
  beforeAll(async () => {
    await loadOpenApiMetadata(); // before the document is first built: the schemas' property types
    t = await startTestApp();
    org = await signUpOrganization(t.http, 'Input bounds');
    document = (await t.http.get('/openapi.json').expect(200)).body;
  }, 600_000);
  afterAll(() => t?.close());

  const rows = async (table: 'api_keys' | 'identities'): Promise<Record<string, unknown>[]> =>
    t.app
      .get(DataSource)
      .query(`SELECT * FROM ${table} WHERE organization_id = $1 ORDER BY id`, [org.organizationId]);

  const fieldsOf = (res: { body: any }): string[] =>
    (res.body.errors as { field: string }[]).map((error) => error.field);

  /** The documented schema of a request body's property, by its dotted path from the body. */
  const bodyProperty = (schemaName: string, path: string): Schema => {
    const found = schemasUnder(document, document.components.schemas[schemaName], schemaName).filter(
      ([at, schema]) => at === `${schemaName}.${path}` && !schema.$ref,
    );
    const leaf = found.find(([, schema]) => types(schema).length > 0);
    if (!leaf) throw new Error(`no schema for ${schemaName}.${path}`);
    return leaf[1];
  };

  /** `{a: {b: value}}` from `'a.b'`, merged into `base`. */
  const bodyWith = (base: Record<string, any>, path: string, value: unknown): Record<string, any> => {
    const body = structuredClone(base);
    const names = path.split('.');
    let node = body;
    for (const name of names.slice(0, -1)) node = node[name] ??= {};
    node[names.at(-1)!] = value;
    return body;
  };

  // The integer fields kept in an `integer` (int4) column, with a body that holds them.
  const credits = { credits: { remaining: 10, refill: { interval: 'daily', amount: 5 } } };
  const rateLimit = { rate_limit: { requests_per_minute: 5, requests_per_hour: 50 } };
  const rotation = { rotation_policy: { enabled: true, days: 30, grace_period_seconds: 0 } };
  const keyBody = { name: 'bounded', role: 'viewer', ...credits, ...rateLimit, ...rotation };
  let identities = 0;
  const identityBody = (): Record<string, unknown> => ({
    external_id: `bounded_${++identities}`,
    ...credits,
    ...rateLimit,
  });
  const keyFields: [string, string][] = [
    ['credits.refill.amount', 'CreditRefillDto'],
    ['rate_limit.requests_per_minute', 'RateLimitDto'],
    ['rate_limit.requests_per_hour', 'RateLimitDto'],
    ['rotation_policy.days', 'RotationPolicyDto'],
    ['rotation_policy.grace_period_seconds', 'RotationPolicyDto'],
  ];
  const identityFields = keyFields.filter(([field]) => !field.startsWith('rotation_policy'));
  const documented = (field: string, schemaName: string): Schema =>
    bodyProperty(schemaName, field.split('.').at(-1)!);

  describe('integers in an integer column', () => {
    it.each([
      ['POST /v1/api-keys', 'api_keys' as const, keyFields],
      ['POST /v1/identities', 'identities' as const, identityFields],
    ])('%s: 2^31 is a 400 naming the field, nothing written', async (route, table, fields) => {
      const path = route.split(' ')[1];
      const base = table === 'api_keys' ? keyBody : identityBody();
      const before = await rows(table);
      for (const [field] of fields) {
        const res = await t.http
          .post(path)
          .set(org.auth)
          .send(bodyWith(base, field, TOO_BIG));
        expectProblem(res, 400, 'validation_failed');
        expect(fieldsOf(res)).toEqual([field]);
      }
      expect(await rows(table)).toEqual(before);
    });

    it.each([
      ['/v1/api-keys', 'api_keys' as const, keyFields],
      ['/v1/identities', 'identities' as const, identityFields],
    ])('PATCH %s/{id}: 2^31 is a 400 naming the field, the row unchanged', async (path, table, fields) => {
      const base = table === 'api_keys' ? keyBody : identityBody();
      const created = await t.http.post(path).set(org.auth).send(base).expect(201);
      const shown = (await t.http.get(`${path}/${created.body.id}`).set(org.auth).expect(200)).body;
      const before = await rows(table);
      for (const [field] of fields) {
        const res = await t.http
          .patch(`${path}/${created.body.id}`)
          .set(org.auth)
          .send(bodyWith(base, field, TOO_BIG));
        expectProblem(res, 400, 'validation_failed');
        expect(fieldsOf(res)).toEqual([field]);
      }
      expect(await rows(table)).toEqual(before);
      const read = await t.http.get(`${path}/${created.body.id}`).set(org.auth).expect(200);
      expect(read.body).toEqual(shown);
      expect(read.body.credits).toEqual(expect.objectContaining(credits.credits));
    });

    it.each([
      ['/v1/api-keys', 'api_keys' as const, keyFields],
      ['/v1/identities', 'identities' as const, identityFields],
    ])(
      '%s: each documented maximum fits its column (create and PATCH answer 2xx and store it)',
      async (path, table, fields) => {
        const valueAt = (body: any, field: string): unknown =>
          field.split('.').reduce((node, name) => node?.[name], body);
        for (const [field, schemaName] of fields) {
          const base = table === 'api_keys' ? keyBody : identityBody();
          const { maximum } = documented(field, schemaName);
          expect(maximum).toBeLessThanOrEqual(INT4_MAX);
          const created = await t.http
            .post(path)
            .set(org.auth)
            .send(bodyWith(base, field, maximum));
          expect({ field, status: created.status }).toEqual({ field, status: 201 });
          expect(valueAt(created.body, field)).toBe(maximum);
          const patched = await t.http
            .patch(`${path}/${created.body.id}`)
            .set(org.auth)
            .send(bodyWith(base, field, maximum - 1));
          expect({ field, status: patched.status }).toEqual({ field, status: 200 });
          expect(valueAt(patched.body, field)).toBe(maximum - 1);
        }
      },
    );

    it("a refill amount of 2147483647 (the column's largest) is taken and shown", async () => {
      const body = bodyWith(keyBody, 'credits.refill.amount', INT4_MAX);
      const key = await createKey(t.http, org.auth, body);
      expect(key.body.credits.refill).toEqual({ interval: 'daily', amount: INT4_MAX });
    });

    it("the rotate grace period, an agent's default_max_credits, a task's max_credits and the policies' max_key_lifetime_days refuse past their documented maximum", async () => {
      const key = await createKey(t.http, org.auth, { name: 'to rotate', role: 'viewer' });
      const agent = await t.http.post('/v1/agents').set(org.auth).send({ name: 'bounded', type: 'echo' });
      expect(agent.status).toBe(201);
      const cases: [string, string, string, string, (value: number) => Record<string, unknown>][] = [
        [
          'post',
          `/v1/api-keys/${key.id}/rotate`,
          'RotateApiKeyDto',
          'grace_period_seconds',
          (v) => ({ grace_period_seconds: v }),
        ],
        [
          'post',
          '/v1/agents',
          'CreateAgentDto',
          'default_max_credits',
          (v) => ({ name: 'a', type: 'echo', default_max_credits: v }),
        ],
        [
          'patch',
          `/v1/agents/${agent.body.id}`,
          'UpdateAgentDto',
          'default_max_credits',
          (v) => ({ default_max_credits: v }),
        ],
        [
          'post',
          '/v1/tasks',
          'CreateTaskDto',
          'max_credits',
          (v) => ({ instruction: 'x', agent_type: 'echo', max_credits: v }),
        ],
        [
          'patch',
          '/v1/organization/policies',
          'UpdateOrganizationPoliciesDto',
          'max_key_lifetime_days',
          (v) => ({ max_key_lifetime_days: v }),
        ],
      ];
      for (const [method, path, schemaName, field, body] of cases) {
        const { maximum } = bodyProperty(schemaName, field);
        expect(maximum).toBeLessThanOrEqual(INT4_MAX);
        for (const value of [maximum + 1, TOO_BIG]) {
          const res = await (t.http as any)[method](path).set(org.auth).send(body(value));
          expectProblem(res, 400, 'validation_failed');
          expect({ path, fields: fieldsOf(res) }).toEqual({ path, fields: [field] });
        }
      }
    });
  });

  describe('the OpenAPI document', () => {
    const requestSchemas = (): [string, Schema][] =>
      Object.entries(document.paths).flatMap(([path, item]) =>
        Object.entries(item).flatMap(([method, operation]) => [
          ...(operation.parameters ?? []).flatMap((parameter: Schema) =>
            schemasUnder(document, parameter.schema, `${method.toUpperCase()} ${path} ?${parameter.name}`),
          ),
          ...Object.values((operation.requestBody?.content as Schema) ?? {}).flatMap((media: Schema) =>
            schemasUnder(document, media.schema, `${method.toUpperCase()} ${path}`),
          ),
        ]),
      );

    it('types limit, wait, max_credits and default_max_credits as integers with their bounds', () => {
      const parameter = (path: string, name: string): Schema =>
        document.paths[path].get.parameters!.find((p) => p.name === name)!.schema;
      expect(parameter('/v1/api-keys', 'limit')).toEqual(
        expect.objectContaining({ type: 'integer', minimum: 1, maximum: 100 }),
      );
      expect(parameter('/v1/tasks/{id}', 'wait')).toEqual(
        expect.objectContaining({ type: 'integer', minimum: 1, maximum: 60 }),
      );
      expect(bodyProperty('CreateTaskDto', 'max_credits')).toEqual(
        expect.objectContaining({ type: 'integer', minimum: 0, maximum: 1_000_000_000 }),
      );
      for (const schemaName of ['CreateAgentDto', 'UpdateAgentDto']) {
        expect(bodyProperty(schemaName, 'default_max_credits')).toEqual(
          expect.objectContaining({ type: ['integer', 'null'], minimum: 0, maximum: 1_000_000_000 }),
        );
      }
      expect(bodyProperty('CreditRefillDto', 'amount')).toEqual(
        expect.objectContaining({ type: 'integer', minimum: 1, maximum: INT4_MAX }),
      );
    });

    it('documents every integer a request carries with a minimum and a maximum', () => {
      const integers = requestSchemas().filter(([, schema]) => types(schema).includes('integer'));
      // The walk must reach the fields that matter, or finding none unbounded would prove nothing.
      expect(integers.map(([path]) => path)).toEqual(
        expect.arrayContaining([
          'POST /v1/api-keys.credits.refill.amount',
          'PATCH /v1/identities/{id}.rate_limit.requests_per_hour',
          'GET /v1/audit-log ?limit',
          'POST /v1/keys/verify.cost',
        ]),
      );
      const unbounded = integers
        .filter(([, schema]) => typeof schema.minimum !== 'number' || typeof schema.maximum !== 'number')
        .map(([path]) => path);
      expect(unbounded).toEqual([]);
    });

    it('types no integer-only field as number, in requests or answers', () => {
      const everything = [
        ...requestSchemas(),
        ...Object.entries(document.components.schemas).flatMap(([name, schema]) =>
          schemasUnder(document, schema, name),
        ),
      ];
      const numbers = new Set(
        everything.filter(([, schema]) => types(schema).includes('number')).map(([path]) => path),
      );
      // What may hold a fraction: prices per 1,000 tokens, a progress percent, and a task's result (any JSON).
      const fractional = /(^|\.)credits_per_1k_(input|output)_tokens$|(^|\.)percent$|(^|\.)result$/;
      expect([...numbers].filter((path) => !fractional.test(path.replace(/^.*-> /, '')))).toEqual([]);
    });
  });

  describe('names with control characters', () => {
    const refused = [
      ['an ANSI escape', 'red \u001b[31malert\u001b[0m'],
      ['a NUL', 'nul\u0000name'],
      ['a newline', 'two\nlines'],
      ['DEL', 'del\u007fname'],
      ['a C1 control (CSI)', 'c1\u009bname'],
      ['a bidi override', 'invoice\u202egnp.exe'],
      ['a bidi isolate', 'left\u2066right\u2069'],
      ['a line separator', 'line\u2028break'],
    ];
    const accepted = 'Zoë’s 日本 key 👩‍💻 (ok)';

    // Each resource's create and update, with a body that holds `field` set to the name.
    const routes = (ids: { key: string; identity: string; agent: string; user: string }) =>
      [
        ['POST /v1/api-keys', 'name', (name: string) => ({ name, role: 'viewer' })],
        [`PATCH /v1/api-keys/${ids.key}`, 'name', (name: string) => ({ name })],
        ['POST /v1/identities', 'external_id', (external_id: string) => ({ external_id })],
        [`PATCH /v1/identities/${ids.identity}`, 'external_id', (external_id: string) => ({ external_id })],
        ['POST /v1/agents', 'name', (name: string) => ({ name, type: 'echo' })],
        [`PATCH /v1/agents/${ids.agent}`, 'name', (name: string) => ({ name })],
        ['POST /v1/teams', 'name', (name: string) => ({ name })],
        [
          'POST /v1/users',
          'name',
          (name: string) => ({
            name,
            email: uniqueEmail('named'),
            password: 'correct-horse-battery',
            role: 'viewer',
          }),
        ],
        [`PATCH /v1/users/${ids.user}`, 'name', (name: string) => ({ name })],
      ] as const;

    let ids: { key: string; identity: string; agent: string; user: string };
    beforeAll(async () => {
      const key = await createKey(t.http, org.auth, { name: 'plain', role: 'viewer' });
      const identity = await t.http
        .post('/v1/identities')
        .set(org.auth)
        .send({ external_id: 'plain' })
        .expect(201);
      const agent = await t.http
        .post('/v1/agents')
        .set(org.auth)
        .send({ name: 'plain', type: 'echo' })
        .expect(201);
      const user = await t.http
        .post('/v1/users')
        .set(org.auth)
        .send({
          name: 'plain',
          email: uniqueEmail('plain'),
          password: 'correct-horse-battery',
          role: 'viewer',
        })
        .expect(201);
      ids = { key: key.id, identity: identity.body.id, agent: agent.body.id, user: user.body.id };
    });

    const send = (route: string, body: Record<string, unknown>) => {
      const [method, path] = route.split(' ');
      return (t.http as any)[method.toLowerCase()](path).set(org.auth).send(body);
    };

    it.each(refused)(
      'refuses a name with %s on every create and update (400 naming the field)',
      async (_what, name) => {
        const before = {
          keys: await rows('api_keys'),
          identities: await rows('identities'),
        };
        for (const [route, field, body] of routes(ids)) {
          const res = await send(route, body(name));
          expectProblem(res, 400, 'validation_failed');
          expect({ route, fields: fieldsOf(res) }).toEqual({ route, fields: [field] });
          expect(res.body.errors[0].message).toBe(`${field} must not contain control characters`);
        }
        expect(await rows('api_keys')).toEqual(before.keys);
        expect(await rows('identities')).toEqual(before.identities);
        const agent = await t.http.get(`/v1/agents/${ids.agent}`).set(org.auth).expect(200);
        expect(agent.body.name).toBe('plain');
        const user = await t.http.get(`/v1/users/${ids.user}`).set(org.auth).expect(200);
        expect(user.body.name).toBe('plain');
      },
    );

    it('refuses them in the signup too', async () => {
      for (const field of ['organization_name', 'name']) {
        const res = await t.http.post('/v1/auth/signup').send({
          organization_name: 'Plain org',
          email: uniqueEmail('signup'),
          password: 'correct-horse-battery',
          name: 'Plain',
          [field]: 'bad\u001b[2Jname',
        });
        expectProblem(res, 400, 'validation_failed');
        expect(fieldsOf(res)).toEqual([field]);
      }
    });

    it('takes names in any script, with accents, emoji and joiners', async () => {
      for (const [route, field, body] of routes(ids)) {
        const value = route.includes('identities') ? `${accepted} ${route.length}` : accepted;
        const res = await send(route, body(value));
        expect({ route, status: res.status }).toEqual({
          route,
          status: route.startsWith('POST') ? 201 : 200,
        });
        expect(res.body[field]).toBe(value);
      }
    });

    // Descriptions may run over several lines; every other control character is refused as in a name.
    it('takes a description over several lines, and refuses the other control characters in it', async () => {
      const multiLine = 'First line\n\tindented second\r\nthird';
      const descriptionRoutes = [
        ['POST /v1/api-keys', (description: string) => ({ name: 'described', role: 'viewer', description })],
        [`PATCH /v1/api-keys/${ids.key}`, (description: string) => ({ description })],
        ['POST /v1/agents', (description: string) => ({ name: 'described', type: 'echo', description })],
        [`PATCH /v1/agents/${ids.agent}`, (description: string) => ({ description })],
      ] as const;
      for (const [route, body] of descriptionRoutes) {
        const res = await send(route, body(multiLine));
        expect({ route, status: res.status, description: res.body.description }).toEqual({
          route,
          status: route.startsWith('POST') ? 201 : 200,
          description: multiLine,
        });
        for (const [, bad] of refused.filter(([what]) => what !== 'a newline')) {
          const refusal = await send(route, body(bad));
          expectProblem(refusal, 400, 'validation_failed');
          expect({ route, fields: fieldsOf(refusal) }).toEqual({ route, fields: ['description'] });
        }
      }
      const key = await t.http.get(`/v1/api-keys/${ids.key}`).set(org.auth).expect(200);
      expect(key.body.description).toBe(multiLine);
    });
  });
});
