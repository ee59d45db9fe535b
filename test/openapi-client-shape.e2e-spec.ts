import { loadOpenApiMetadata } from './support/openapi-metadata';
import { signUpOrganization, SignedUpOrganization } from './support/factories';
import { startTestApp, TestApp } from './support/test-app';

type Schema = Record<string, any>;
interface Operation {
  operationId?: string;
  parameters?: Schema[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, { post: Operation }>;
  components: { schemas: Record<string, Schema> };
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * Issue 43: the document as a generator reads it with its default options (openapi-typescript +
 * openapi-fetch, clients/typescript): readable operation ids, lists in a query in the comma form the
 * server reads, no body where the server needs none, no field made required by its `default`, and the
 * answers that are not JSON said so.
 */
describe('the OpenAPI document, as a client generator reads it', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  let document: Document;
  let key: { id: string; key: string };

  // Generous: the plugin's metadata reads the whole program once per run (minutes on a busy machine).
  beforeAll(async () => {
    await loadOpenApiMetadata(); // before the document is first built: the schemas as `nest build` has them
    t = await startTestApp();
    org = await signUpOrganization(t.http, 'Client shape');
    key = (
      await t.http.post('/v1/api-keys').set(org.auth).send({ name: 'shape', role: 'developer' }).expect(201)
    ).body;
    document = (await t.http.get('/openapi.json').expect(200)).body;
  }, 600_000);
  afterAll(() => t?.close());

  const operations = () => operationsOf(document);
  const operationsOf = (document: Document): { name: string; operation: Operation }[] => [
    ...Object.entries(document.paths).flatMap(([path, item]) =>
      METHODS.filter((method) => item[method]).map((method) => ({
        name: `${method.toUpperCase()} ${path}`,
        operation: item[method],
      })),
    ),
    ...Object.entries(document.webhooks).map(([event, item]) => ({
      name: `webhook ${event}`,
      operation: item.post,
    })),
  ];

  describe('operation ids', () => {
    it("every operation has one, camelCase, never Nest's default `XController_method`, none twice", () => {
      const all = operations();
      expect(all.length).toBeGreaterThan(70);
      const ids = all.map(({ operation }) => operation.operationId);
      const notReadable = all
        .filter(({ operation }) => !/^[a-z][a-zA-Z0-9]*$/.test(operation.operationId ?? '_'))
        .map(({ name, operation }) => `${name}: ${operation.operationId}`);
      expect(notReadable).toEqual([]);
      expect(ids.filter((id) => /Controller/.test(id!))).toEqual([]);
      const twice = ids.filter((id, index) => ids.indexOf(id) !== index);
      expect(twice).toEqual([]);
    });

    it('name what the call does: a generated client calls them so, and a change breaks it', () => {
      const named = Object.fromEntries(
        operations().map(({ name, operation }) => [name, operation.operationId]),
      );
      expect(named).toMatchObject({
        'POST /v1/api-keys': 'createApiKey',
        'GET /v1/api-keys': 'listApiKeys',
        'POST /v1/api-keys/{id}/rotate': 'rotateApiKey',
        'POST /v1/keys/verify': 'verifyApiKey',
        'GET /v1/auth/verify': 'verifyCredential',
        'GET /v1/tasks': 'listTasks',
        'GET /v1/tasks/{id}': 'getTask',
        'GET /v1/identities/{id}': 'getIdentity',
        'GET /v1/files/{id}/content': 'downloadFile',
        'webhook key.created': 'keyCreatedWebhook',
      });
    });

    it("the core's are one reviewed list: a change shows in review as a snapshot diff", async () => {
      // The core alone, whatever extensions this run's list adds (CI runs the suite with the examples').
      const core = await startTestApp({ core: true });
      try {
        const coreDocument: Document = (await core.http.get('/openapi.json').expect(200)).body;
        const ids = operationsOf(coreDocument).map(
          ({ name, operation }) => `${name} -> ${operation.operationId}`,
        );
        expect(ids).toMatchSnapshot();
      } finally {
        await core.close();
      }
    });
  });

  describe('lists in a query', () => {
    const arrayQueryParameters = (): [string, Schema][] =>
      operations().flatMap(({ name, operation }) =>
        (operation.parameters ?? [])
          .filter((parameter) => parameter.in === 'query' && parameter.schema?.type === 'array')
          .map((parameter): [string, Schema] => [`${name} ?${parameter.name}`, parameter]),
      );

    it('are comma-separated: style form, explode false', () => {
      const found = arrayQueryParameters();
      // The walk must reach the lists there are, or finding none wrong would prove nothing.
      expect(found.map(([name]) => name)).toEqual(
        expect.arrayContaining(['GET /v1/audit-log ?expand', 'GET /v1/api-keys/{id}/audit-log ?expand']),
      );
      const otherwise = found.filter(([, p]) => p.style !== 'form' || p.explode !== false).map(([n]) => n);
      expect(otherwise).toEqual([]);
    });

    it('the server reads `?expand=actor,key` as the document says: two values', async () => {
      const res = await t.http.get('/v1/audit-log?expand=actor,key').set(org.auth).expect(200);
      const created = res.body.data.find((entry: Schema) => entry.action === 'key.created');
      expect(created.actor).toMatchObject({ name: 'Admin' });
      expect(created.key).toMatchObject({ id: key.id, name: 'shape', deleted: false });
    });
  });

  describe('request bodies', () => {
    it("rotate's body is optional, and a rotation without one is taken", async () => {
      expect(document.paths['/v1/api-keys/{id}/rotate'].post.requestBody?.required).toBe(false);
      const rotated = await t.http.post(`/v1/api-keys/${key.id}/rotate`).set(org.auth).expect(200);
      expect(rotated.body.key).toEqual(expect.stringMatching(/\S/));
      expect(rotated.body.key).not.toBe(key.key);
    });

    /** Every schema a request body reaches, each once, with the path it was reached by. */
    const bodySchemas = (): [string, Schema][] => {
      const seen = new Set<Schema>();
      const out: [string, Schema][] = [];
      const visit = (schema: Schema | undefined, path: string): void => {
        if (!schema || typeof schema !== 'object' || seen.has(schema)) return;
        seen.add(schema);
        out.push([path, schema]);
        if (typeof schema.$ref === 'string') {
          const name = schema.$ref.replace('#/components/schemas/', '');
          visit(document.components.schemas[name], `${path} -> ${name}`);
        }
        for (const [name, property] of Object.entries((schema.properties as Record<string, Schema>) ?? {}))
          visit(property, `${path}.${name}`);
        visit(schema.items, `${path}[]`);
        visit(schema.additionalProperties, `${path}{}`);
        for (const keyword of ['allOf', 'anyOf', 'oneOf'])
          ((schema[keyword] as Schema[]) ?? []).forEach((branch) => visit(branch, path));
      };
      for (const { name, operation } of operations())
        for (const media of Object.values(operation.requestBody?.content ?? {})) visit(media.schema, name);
      return out;
    };

    it('carry no `default` (a generator makes such a field required); the description says it', () => {
      const schemas = bodySchemas();
      const enabled = schemas.find(([path]) => path === 'POST /v1/api-keys -> CreateApiKeyDto.enabled');
      expect(enabled?.[1].description).toMatch(/Default: `true`\.$/);
      expect(schemas.filter(([, schema]) => 'default' in schema).map(([path]) => path)).toEqual([]);
      expect(document.components.schemas.CreateApiKeyDto.required ?? []).not.toContain('enabled');
    });
  });

  describe('answers that are not JSON', () => {
    it("a file's content is binary, application/octet-stream first", () => {
      const content = document.paths['/v1/files/{id}/content'].get.responses['200'].content!;
      expect(Object.keys(content)[0]).toBe('application/octet-stream');
      expect(content['application/octet-stream'].schema).toEqual({ type: 'string', format: 'binary' });
    });

    it("a task's events: a JSON page, or the event stream, each its own media type", () => {
      const content = document.paths['/v1/tasks/{id}/events'].get.responses['200'].content!;
      expect(content['application/json'].schema).toEqual({ $ref: '#/components/schemas/TaskEventPage' });
      expect(content['text/event-stream'].schema).toMatchObject({ type: 'string' });
    });
  });
});
