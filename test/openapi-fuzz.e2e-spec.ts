import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import fc from 'fast-check';
import type { Response } from 'supertest';
import { createUser, signUpOrganization, type SignedUpOrganization } from './support/factories';
import { loadOpenApiMetadata } from './support/openapi-metadata';
import { CALLS_LOCAL_TARGETS, PUBLIC_URL } from './support/outbound-targets';
import { WebhookReceiver } from './support/webhook-receiver';
import { startTestApp, type TestApp } from './support/test-app';

/**
 * Requests generated from the app's own /openapi.json, as schemathesis makes them: for every documented
 * operation, requests whose parameters and body follow the schemas and requests that break them, sent
 * as an administrator. Every answer must be one the document gives for that operation (its status, its
 * content type, a body its schema accepts), none a 5xx; a request the schemas refuse is never accepted;
 * and a documented path answers a method it does not document with 405 and `Allow`.
 *
 * Seeded and bounded (VALID_RUNS and INVALID_RUNS an operation), so a failure replays and the run takes seconds.
 */

type Schema = Record<string, any>;
type Operation = {
  parameters?: {
    name: string;
    in: 'path' | 'query' | 'header' | 'cookie';
    required?: boolean;
    schema?: Schema;
  }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
};
type Document = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

const SEED = 41;
const VALID_RUNS = 4;
const INVALID_RUNS = 4;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
/** Deep enough for every request body the API takes; a schema that recurses stops here. */
const MAX_DEPTH = 6;
/**
 * An integer the document leaves unbounded is generated over every integer a JSON number carries
 * exactly: every integer the API takes must carry its column's bound (issue 41, finding 1), and one
 * that does not shows up here as a 5xx.
 */
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/** The document's schema at a `$ref`, once resolved. */
const resolve = (document: Document, schema: Schema): Schema => {
  let current = schema;
  for (let hops = 0; typeof current?.$ref === 'string' && hops < 10; hops++) {
    current = document.components.schemas[current.$ref.replace('#/components/schemas/', '')];
  }
  return current;
};

const typesOf = (schema: Schema): string[] =>
  Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];

/** A fast-check arbitrary of the values `schema` accepts (formats included; patterns through stringMatching). */
function valueOf(document: Document, raw: Schema, depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(document, raw);
  if (!schema || Object.keys(schema).length === 0) return fc.oneof(fc.string({ maxLength: 8 }), fc.integer());
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  if (schema.oneOf || schema.anyOf) {
    return fc.oneof(
      ...(schema.oneOf ?? schema.anyOf).map((branch: Schema) => valueOf(document, branch, depth + 1)),
    );
  }
  if (schema.allOf) {
    const merged = schema.allOf
      .map((part: Schema) => resolve(document, part))
      .reduce(
        (all: Schema, part: Schema) => ({
          ...all,
          ...part,
          properties: { ...all.properties, ...part.properties },
          required: [...(all.required ?? []), ...(part.required ?? [])],
        }),
        {},
      );
    return valueOf(document, { ...merged, allOf: undefined }, depth);
  }
  const types = typesOf(schema);
  if (types.length > 1)
    return fc.oneof(...types.map((type) => valueOf(document, { ...schema, type }, depth)));
  switch (types[0]) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
    case 'number': {
      const min =
        schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : -UNBOUNDED);
      const max =
        schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - 1 : UNBOUNDED);
      const low = Math.ceil(min);
      const high = Math.max(Math.floor(max), low);
      // fc.integer stops at 32 bits; past them the same range comes from bigints.
      const integers =
        low >= -(2 ** 31) && high < 2 ** 31
          ? fc.integer({ min: low, max: high })
          : fc.bigInt({ min: BigInt(low), max: BigInt(high) }).map(Number);
      if (types[0] === 'integer') return integers;
      return fc.oneof(integers, fc.double({ min, max, noNaN: true, noDefaultInfinity: true }));
    }
    case 'string':
      return stringOf(schema);
    case 'array': {
      const items = valueOf(document, schema.items ?? {}, depth + 1);
      const minLength = schema.minItems ?? 0;
      return fc.array(items, {
        minLength,
        maxLength: Math.min(schema.maxItems ?? minLength + 3, minLength + 3),
      });
    }
    case 'object':
    default: {
      if (depth >= MAX_DEPTH) return fc.constant({});
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const required = (schema.required ?? []) as string[];
      const known = fc.record(
        Object.fromEntries(
          Object.entries(properties).map(([name, property]) => [
            name,
            valueOf(document, property, depth + 1),
          ]),
        ),
        { requiredKeys: required.filter((name) => name in properties) },
      );
      if (!schema.additionalProperties) return known;
      const extra = schema.additionalProperties === true ? {} : (schema.additionalProperties as Schema);
      return fc
        .tuple(
          known,
          fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), valueOf(document, extra, depth + 1), {
            maxKeys: 3,
          }),
        )
        .map(([own, more]) => ({ ...more, ...own }));
    }
  }
}

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const maxLength = Math.min(schema.maxLength ?? 24, Math.max(schema.minLength ?? 0, 24));
  const minLength = Math.min(schema.minLength ?? 0, maxLength);
  switch (schema.format) {
    case 'date-time':
      return fc
        .date({
          min: new Date('2020-01-01T00:00:00Z'),
          max: new Date('2030-01-01T00:00:00Z'),
          noInvalidDate: true,
        })
        .map((date) => date.toISOString());
    case 'email':
      return fc.emailAddress().filter((email) => email.length <= (schema.maxLength ?? 254));
    case 'uri':
      return fc.webUrl().filter((url) => url.length <= (schema.maxLength ?? 2000));
    case 'uuid':
      return fc.uuid();
    case 'binary':
      return fc.string({ maxLength: 16 });
  }
  if (schema.pattern) {
    return fc
      .stringMatching(new RegExp(schema.pattern as string))
      .filter((value) => value.length >= minLength && value.length <= (schema.maxLength ?? Infinity));
  }
  return fc.string({ minLength, maxLength, unit: fc.constantFrom(...'abcdefghijkXYZ0189 _-.:/é✓') });
}

/** Values `schema` refuses: another type, out of its bounds, off its enum. */
function invalidValueOf(document: Document, raw: Schema): unknown[] {
  const schema = resolve(document, raw) ?? {};
  const types = typesOf(schema);
  const out: unknown[] = [];
  if (schema.enum) out.push('not-one-of-the-enum');
  if (!types.includes('string') && (types.length || schema.properties)) out.push('a string');
  if (!types.includes('number') && !types.includes('integer') && types.length) out.push(12345);
  if (!types.includes('object') && types.length) out.push({ nested: 'object' });
  if (types.includes('integer')) out.push(1.5);
  if (schema.maximum !== undefined) out.push(schema.maximum + 1);
  if (schema.minimum !== undefined) out.push(schema.minimum - 1);
  if (schema.maxLength !== undefined && !schema.format && !schema.pattern)
    out.push('x'.repeat(schema.maxLength + 1));
  return out;
}

type Request = {
  label: string;
  method: string;
  path: string;
  query: [string, string][];
  headers: Record<string, string>;
  body?: { contentType: string; value: unknown };
  /** True when the request breaks the document's schemas (the server must refuse it). */
  invalid: boolean;
};

describe('the OpenAPI document, fuzzed', () => {
  let t: TestApp;
  let document: Document;
  let admin: SignedUpOrganization;
  let receiver: WebhookReceiver;
  let ajv: Ajv2020;
  /** Real ids per path parameter, so that generated requests reach their handlers. */
  const ids: Record<string, string[]> = {};
  const validators = new Map<Schema, ValidateFunction>();

  const validatorOf = (schema: Schema): ValidateFunction => {
    let validate = validators.get(schema);
    if (!validate) {
      const rebased = JSON.parse(
        JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/'),
      );
      validate = ajv.compile(rebased);
      validators.set(schema, validate);
    }
    return validate;
  };

  beforeAll(async () => {
    await loadOpenApiMetadata();
    // GitHub's secret-scanning keys from here: a report is checked (and refused as unsigned), not a 503.
    receiver = await WebhookReceiver.start();
    receiver.script('/public-keys', () => ({ status: 200, json: { public_keys: [] } }));
    t = await startTestApp({
      env: { SECRET_SCANNING_KEYS_URL: receiver.url('/public-keys'), ...CALLS_LOCAL_TARGETS },
    });
    document = (await t.http.get('/openapi.json').expect(200)).body;
    ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema({ $id: 'openapi', components: document.components });

    admin = await signUpOrganization(t.http, 'Fuzzed');
    const post = async (path: string, body: object) =>
      (
        await t.http
          .post(path)
          .set(admin.auth)
          .send(body)
          .expect((res) => {
            if (res.status >= 300) throw new Error(`setup: ${path} answered ${res.status} ${res.text}`);
          })
      ).body;
    const key = await post('/v1/api-keys', { name: 'fuzzed key', type: 'service', role: 'viewer' });
    const identity = await post('/v1/identities', { external_id: 'fuzzed-identity' });
    const role = await post('/v1/roles', { role_name: 'fuzzed_role', permissions: { agents: ['read'] } });
    // Not the administrator: a generated PATCH or deactivation must not take the fuzz's own access away.
    const user = await createUser(t.http, admin, 'viewer');
    const team = await post('/v1/teams', { name: 'fuzzed team' });
    await post(`/v1/teams/${team.id}/members`, { user_id: user.id });
    const file = (
      await t.http
        .post('/v1/files')
        .set(admin.auth)
        .attach('file', Buffer.from('{"fuzzed":true}'), {
          filename: 'fuzzed.json',
          contentType: 'application/json',
        })
        .expect(201)
    ).body;
    const agents = (await t.http.get('/v1/agents').set(admin.auth).expect(200)).body.data;
    const task = await post('/v1/tasks', { instruction: 'fuzzed', agent_type: 'echo' });
    // Finished, so that a generated `wait` answers at once instead of holding the run for its seconds.
    await t.http.post(`/v1/tasks/${task.id}/cancel`).set(admin.auth);
    const webhook = await post('/v1/webhooks', {
      url: PUBLIC_URL,
      events: ['key.created'],
    });
    const delivery = (await t.http.post(`/v1/webhooks/${webhook.id}/test`).set(admin.auth).expect(202)).body;

    const random = ['key_0000000000000000000000', 'nothing-here', '%E2%9C%93', '0'];
    Object.assign(ids, {
      '/v1/api-keys/{id}': [key.id],
      '/v1/identities/{id}': [identity.id],
      '/v1/roles/{roleName}': [role.role_name, 'viewer'],
      '/v1/users/{id}': [user.id],
      '/v1/teams/{id}': [team.id],
      '{userId}': [user.id],
      '/v1/files/{id}': [file.id],
      '/v1/agents/{id}': agents.map((agent: { id: string }) => agent.id).slice(0, 2),
      '/v1/tasks/{id}': [task.id],
      '/v1/webhooks/{id}': [webhook.id],
      '{deliveryId}': [delivery.id],
    });
    for (const list of Object.values(ids)) list.push(...random);
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const idsFor = (path: string, name: string): string[] =>
    ids[`{${name}}`] ??
    Object.entries(ids).find(
      ([prefix]) => prefix.startsWith('/') && path.startsWith(prefix.replace(/\/$/, '')),
    )?.[1] ?? ['x'];

  // A header's value is visible ASCII: the client refuses to send anything else.
  const parameterValueOf = (p: NonNullable<Operation['parameters']>[number]): fc.Arbitrary<unknown> =>
    p.in === 'header' && !p.schema?.enum
      ? fc.string({ minLength: 1, maxLength: 24, unit: fc.constantFrom(...'abcXYZ019-_.:') })
      : valueOf(document, p.schema ?? {});

  /** Valid requests, then invalid ones (one part broken each), for one operation. */
  function requestsOf(path: string, method: string, operation: Operation, seed: number): Request[] {
    const parameters = operation.parameters ?? [];
    const pathParameters = parameters.filter((p) => p.in === 'path');
    const others = parameters.filter((p) => p.in === 'query' || p.in === 'header');
    const [contentType, media] = Object.entries(operation.requestBody?.content ?? {})[0] ?? [];
    const bodySchema = media?.schema;
    const requestArbitrary = fc.record({
      pathValues: fc.tuple(...pathParameters.map((p) => fc.constantFrom(...idsFor(path, p.name)))),
      values: fc.record(Object.fromEntries(others.map((p) => [p.name, parameterValueOf(p)])), {
        requiredKeys: others.filter((p) => p.required).map((p) => p.name),
      }),
      body: bodySchema ? valueOf(document, bodySchema) : fc.constant(undefined),
    });
    const build = (
      { pathValues, values, body }: { pathValues: string[]; values: Record<string, unknown>; body: unknown },
      invalid: boolean,
      label: string,
    ): Request => {
      let concrete = path;
      pathParameters.forEach((p, i) => {
        concrete = concrete.replace(`{${p.name}}`, encodeURIComponent(pathValues[i]).replaceAll('%25', '%'));
      });
      const query: [string, string][] = [];
      const headers: Record<string, string> = {};
      for (const p of others) {
        const value = values[p.name];
        if (value === undefined) continue;
        if (p.in === 'header') headers[p.name] = String(value);
        else
          for (const item of [value].flat())
            query.push([p.name, typeof item === 'string' ? item : JSON.stringify(item)]);
      }
      return {
        label: `${method.toUpperCase()} ${path} (${label})`,
        method,
        path: concrete,
        query,
        headers,
        body: contentType && body !== undefined ? { contentType, value: body } : undefined,
        invalid,
      };
    };
    const valid = fc.sample(requestArbitrary, { seed, numRuns: VALID_RUNS });
    const out = valid.map((sample, i) => build(sample, false, `valid #${i}`));

    // One part broken per request: a query value, a body property, or the body's shape.
    const breakers: ((sample: (typeof valid)[number]) => [typeof sample, string] | undefined)[] = [];
    for (const p of others.filter((p) => p.in === 'query')) {
      for (const bad of invalidValueOf(document, p.schema ?? {})) {
        if (typeof bad === 'object') continue;
        breakers.push((sample) => [
          { ...sample, values: { ...sample.values, [p.name]: bad } },
          `${p.name}=${String(bad).slice(0, 20)}`,
        ]);
      }
    }
    if (bodySchema && contentType === 'application/json') {
      const root = resolve(document, bodySchema);
      for (const [name, property] of Object.entries((root.properties ?? {}) as Record<string, Schema>)) {
        for (const bad of invalidValueOf(document, property)) {
          breakers.push((sample) =>
            isObject(sample.body)
              ? [{ ...sample, body: { ...sample.body, [name]: bad } }, `body.${name} broken`]
              : undefined,
          );
        }
      }
      for (const name of root.required ?? []) {
        breakers.push((sample) => {
          if (!isObject(sample.body)) return undefined;
          const { [name]: _dropped, ...rest } = sample.body;
          return [{ ...sample, body: rest }, `body.${name} missing`];
        });
      }
      breakers.push((sample) =>
        isObject(sample.body)
          ? [{ ...sample, body: { ...sample.body, fuzz_unknown_field: 1 } }, 'unknown field']
          : undefined,
      );
      // An unknown field one level down, wherever the document says the nested object is closed too.
      for (const [name, property] of Object.entries((root.properties ?? {}) as Record<string, Schema>)) {
        const held =
          (property.anyOf as Schema[] | undefined)?.find((branch) => branch.type !== 'null') ?? property;
        if (resolve(document, held.allOf?.[0] ?? held)?.additionalProperties !== false) continue;
        breakers.push((sample) =>
          isObject(sample.body) && isObject(sample.body[name])
            ? [
                {
                  ...sample,
                  body: { ...sample.body, [name]: { ...sample.body[name], fuzz_unknown_field: 1 } },
                },
                `unknown field in ${name}`,
              ]
            : undefined,
        );
      }
      breakers.push((sample) => [
        { ...sample, body: root.type === 'array' ? { not: 'an array' } : ['not', 'an', 'object'] },
        'wrong shape',
      ]);
    }
    if (breakers.length) {
      const picks = fc.sample(fc.tuple(fc.nat(valid.length - 1), fc.nat(breakers.length - 1)), {
        seed: seed + 1,
        numRuns: INVALID_RUNS,
      });
      for (const [sampleIndex, breakerIndex] of picks) {
        const broken = breakers[breakerIndex](valid[sampleIndex]);
        if (!broken) continue;
        const request = build(broken[0], true, `invalid: ${broken[1]}`);
        // A broken body is invalid only if its schema says so: one it still accepts proves nothing.
        if (bodySchema && request.body && contentType === 'application/json') {
          request.invalid =
            !/^body|unknown|wrong/.test(broken[1]) || !validatorOf(bodySchema)(request.body.value);
        }
        out.push(request);
      }
    }
    return out;
  }

  async function send(request: Request): Promise<Response> {
    const search = new URLSearchParams(request.query).toString();
    let call = t.http[request.method as 'get'](`${request.path}${search ? `?${search}` : ''}`)
      .set(admin.auth)
      .set(request.headers);
    if (request.body?.contentType === 'multipart/form-data') {
      const { file, ...fields } = request.body.value as Record<string, unknown>;
      for (const [name, value] of Object.entries(fields)) call = call.field(name, String(value));
      if (file !== undefined) call = call.attach('file', Buffer.from(String(file)), 'fuzzed.txt');
    } else if (request.body) {
      call = call.set('Content-Type', request.body.contentType).send(JSON.stringify(request.body.value));
    }
    return call.buffer(true).parse((res, done) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => done(null, Buffer.concat(chunks)));
    });
  }

  /** What is wrong with an answer, by the document; nothing when it conforms. */
  function problemsOf(request: Request, operation: Operation, res: Response): string[] {
    const problems: string[] = [];
    if (res.status >= 500) problems.push(`a ${res.status}`);
    const documented =
      operation.responses[String(res.status)] ??
      operation.responses[`${String(res.status)[0]}XX`] ??
      operation.responses.default;
    if (!documented)
      return [...problems, `status ${res.status} is not documented (${Object.keys(operation.responses)})`];
    if (request.invalid && res.status < 300) problems.push(`an invalid request answered ${res.status}`);
    const raw = res.body as Buffer;
    if (!documented.content) {
      if (raw.length) problems.push(`a body where none is documented`);
      return problems;
    }
    const mediaType = String(res.headers['content-type'] ?? '')
      .split(';')[0]
      .trim();
    const documentedType = [mediaType, `${mediaType.split('/')[0]}/*`, '*/*'].find(
      (type) => documented.content![type],
    );
    if (!documentedType) {
      return [
        ...problems,
        `content type ${mediaType} is not documented (${Object.keys(documented.content)})`,
      ];
    }
    const media = documented.content[documentedType];
    // A JSON schema where the document names JSON; under a wildcard, any bytes are the documented binary.
    if (media.schema && /json$/.test(documentedType)) {
      const validate = validatorOf(media.schema);
      if (!validate(JSON.parse(raw.toString('utf8')))) {
        problems.push(`body does not conform: ${ajv.errorsText(validate.errors)}`);
      }
    }
    return problems;
  }

  it('answers every generated request as its operation documents, never with a 5xx', async () => {
    const failures: string[] = [];
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      METHODS.filter((method) => item[method]).map((method) => ({ path, method, operation: item[method] })),
    );
    // Deletions last, so that the other operations meet the ids created above.
    operations.sort((a, b) => Number(a.method === 'delete') - Number(b.method === 'delete'));
    expect(operations.length).toBeGreaterThan(60);
    let sent = 0;
    let invalid = 0;
    for (const [index, { path, method, operation }] of operations.entries()) {
      for (const request of requestsOf(path, method, operation, SEED + index * 7)) {
        const res = await send(request);
        sent++;
        if (request.invalid) invalid++;
        for (const problem of problemsOf(request, operation, res)) {
          failures.push(
            `${request.label} ${request.path}?${new URLSearchParams(request.query)} ${JSON.stringify(request.body?.value)?.slice(0, 200)}: ${problem}; answered ${res.status} ${(res.body as Buffer).toString('utf8').slice(0, 300)}`,
          );
        }
      }
    }
    // The generators must have made both kinds, or the assertions above would prove little.
    expect(sent).toBeGreaterThan(operations.length * VALID_RUNS);
    expect(invalid).toBeGreaterThan(operations.length);
    expect(failures).toEqual([]);
  });

  it('says of every body the server closes that unknown fields are refused', () => {
    const open = Object.entries(document.paths).flatMap(([path, item]) =>
      METHODS.flatMap((method) =>
        Object.entries(item[method]?.requestBody?.content ?? {})
          .filter(([, media]) => media.schema.$ref)
          .filter(([, media]) => resolve(document, media.schema).additionalProperties !== false)
          .map(([type]) => `${method.toUpperCase()} ${path} ${type}`),
      ),
    );
    expect(open).toEqual([]);
    // Nested objects the pipe validates through are closed as well.
    const credits = resolve(document, document.components.schemas.CreateApiKeyDto.properties.credits);
    const held = credits.anyOf?.find((branch: Schema) => branch.type !== 'null') ?? credits;
    expect(resolve(document, held.allOf?.[0] ?? held).additionalProperties).toBe(false);
  });

  it("types each task event's data by the event's type", () => {
    const events = document.components.schemas.TaskEventPage.properties.data.items;
    const variants: Schema[] = (events.oneOf ?? []).map((variant: Schema) => resolve(document, variant));
    const byType = Object.fromEntries(
      variants.map((variant) => [variant.properties.type.enum.join(), variant.properties.data.$ref]),
    );
    expect(byType).toEqual({
      status: '#/components/schemas/TaskStatusData',
      progress: '#/components/schemas/TaskProgressData',
      output: '#/components/schemas/TaskOutputData',
      usage: '#/components/schemas/TaskUsageData',
      file: '#/components/schemas/TaskOutputFileResponse',
    });
    expect(events.discriminator?.propertyName).toBe('type');
    // Exactly one variant for any event: `oneOf` holds.
    const validate = validatorOf(events);
    expect(validate({ seq: 1, type: 'progress', data: {}, created_at: new Date().toISOString() })).toBe(true);
    expect(validate({ seq: 1, type: 'status', data: {}, created_at: new Date().toISOString() })).toBe(false);
  });

  it('answers a documented path 405 with Allow for a method it does not document, and OPTIONS 204 with Allow', async () => {
    const wrong: string[] = [];
    for (const path of Object.keys(document.paths)) {
      const concrete = path.replace(/\{[^}]+\}/g, (match) => idsFor(path, match.slice(1, -1))[0]);
      // Every documented path that takes this one: `/v1/api-keys/defaults` is also `/v1/api-keys/{id}`.
      const segments = concrete.split('/');
      const matching = Object.entries(document.paths).filter(([other]) => {
        const pattern = other.split('/');
        return (
          pattern.length === segments.length &&
          pattern.every((s, i) => s.startsWith('{') || s === segments[i])
        );
      });
      const allowed = METHODS.filter((method) => matching.some(([, other]) => other[method]));
      const expectedAllow = [
        ...allowed.map((m) => m.toUpperCase()),
        ...(allowed.includes('get') ? ['HEAD'] : []),
        'OPTIONS',
      ].sort();
      // OPTIONS asks what the path takes: 204 with the same Allow.
      const options = await t.http.options(concrete).set(admin.auth);
      const optionsAllow = String(options.headers.allow ?? '')
        .split(',')
        .map((m) => m.trim())
        .sort();
      if (options.status !== 204 || optionsAllow.join() !== expectedAllow.join()) {
        wrong.push(`OPTIONS ${concrete}: ${options.status} Allow: ${options.headers.allow}`);
      }
      for (const method of METHODS.filter((m) => !allowed.includes(m))) {
        const res = await t.http[method](concrete).set(admin.auth);
        const allow = String(res.headers.allow ?? '')
          .split(',')
          .map((m) => m.trim())
          .filter(Boolean)
          .sort();
        const isProblem = /^application\/problem\+json/.test(String(res.headers['content-type']));
        if (
          res.status !== 405 ||
          !isProblem ||
          res.body.code !== 'method_not_allowed' ||
          allow.join() !== expectedAllow.join()
        ) {
          wrong.push(
            `${method.toUpperCase()} ${concrete}: ${res.status} ${res.body?.code} Allow: ${res.headers.allow}`,
          );
        }
      }
    }
    expect(wrong).toEqual([]);
    // Paths nobody declared stay 404.
    await t.http.put('/v1/no-such-thing').set(admin.auth).expect(404);
    await t.http.put('/v1/api-keys/some-id/nothing-here').set(admin.auth).expect(404);
  });
});

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
