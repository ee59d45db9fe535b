import { startTestApp, TestApp } from './support/test-app';

type Schema = Record<string, unknown>;
type Document = {
  paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> } }>>;
  components: { schemas: Record<string, Schema> };
};

/**
 * Every schema a request body's schema reaches (through `$ref`, `properties`, `items`,
 * `additionalProperties`, `allOf`/`anyOf`/`oneOf`), each once, with the path it was reached by.
 */
function reachableSchemas(document: Document, root: Schema, at: string): [string, Schema][] {
  const seen = new Set<Schema>();
  const out: [string, Schema][] = [];
  const visit = (schema: unknown, path: string): void => {
    if (!schema || typeof schema !== 'object' || seen.has(schema as Schema)) return;
    const node = schema as Schema;
    seen.add(node);
    out.push([path, node]);
    if (typeof node.$ref === 'string') {
      const name = node.$ref.replace('#/components/schemas/', '');
      visit(document.components.schemas[name], `${path} -> ${name}`);
    }
    for (const [name, property] of Object.entries((node.properties as Record<string, Schema>) ?? {})) {
      visit(property, `${path}.${name}`);
    }
    visit(node.items, `${path}[]`);
    visit(node.additionalProperties, `${path}{}`);
    for (const keyword of ['allOf', 'anyOf', 'oneOf']) {
      ((node[keyword] as Schema[]) ?? []).forEach((branch) => visit(branch, path));
    }
  };
  visit(root, at);
  return out;
}

/**
 * A PATCH leaves what it does not name as it is: a `default` in its body's schema tells a typed client
 * to fill the field in, so a client that fills defaults would re-enable a disabled key (issue 20).
 */
describe('the OpenAPI document: PATCH request bodies', () => {
  let t: TestApp;
  let document: Document;

  beforeAll(async () => {
    t = await startTestApp();
    document = (await t.http.get('/openapi.json').expect(200)).body;
  });
  afterAll(() => t?.close());

  const bodySchemas = (method: string): [string, Schema][] =>
    Object.entries(document.paths).flatMap(([path, item]) =>
      Object.values(item[method]?.requestBody?.content ?? {}).flatMap(({ schema }) =>
        schema ? reachableSchemas(document, schema, `${method.toUpperCase()} ${path}`) : [],
      ),
    );

  it('give no field a default, however deep', () => {
    const schemas = bodySchemas('patch');
    // The walk must reach the fields that matter, or finding no default would prove nothing.
    const paths = schemas.map(([path]) => path);
    expect(paths).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^PATCH \/v1\/api-keys\/\{id\} -> UpdateApiKeyDto\.enabled$/),
        expect.stringMatching(/UpdateApiKeyDto\.rotation_policy -> RotationPolicyDto\.grace_period_seconds$/),
        expect.stringMatching(/^PATCH \/v1\/webhooks\/\{id\} -> UpdateWebhookDto\.enabled$/),
      ]),
    );
    expect(schemas.filter(([, schema]) => 'default' in schema).map(([path]) => path)).toEqual([]);
  });

  // In words, not as a `default`: a generator makes a field with a default required (issue 43).
  it('a create body still documents its defaults, in the description', () => {
    const defaults = bodySchemas('post')
      .filter(([, schema]) => /Default: `/.test(String(schema.description ?? '')))
      .map(([path, schema]) => [path, String(schema.description).match(/Default: `(.*)`\.$/)?.[1]]);
    expect(defaults).toEqual(
      expect.arrayContaining([
        ['POST /v1/api-keys -> CreateApiKeyDto.enabled', 'true'],
        ['POST /v1/webhooks -> CreateWebhookDto.enabled', 'true'],
      ]),
    );
  });
});
