import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiResponse, type OpenAPIObject } from '@nestjs/swagger';
import { STATUS_CODES } from 'node:http';

export class FieldErrorSchema {
  @ApiProperty({ example: 'name' }) field: string;
  @ApiProperty({ example: 'name must be shorter than or equal to 100 characters' }) message: string;
}

/** RFC 9457 body of every error, documented once. */
export class ProblemSchema {
  @ApiProperty({ example: 'urn:gatehouse:problem:validation_failed' }) type: string;
  @ApiProperty({ example: 'Bad Request' }) title: string;
  @ApiProperty({ type: 'integer', example: 400 }) status: number;
  @ApiProperty() detail: string;
  @ApiProperty({ example: 'validation_failed', description: 'Stable machine-readable error code.' })
  code: string;
  @ApiProperty({ example: 'req_6f1c…' }) request_id: string;
  @ApiPropertyOptional({ type: [FieldErrorSchema] }) errors?: FieldErrorSchema[];
  @ApiPropertyOptional({
    enum: ['key', 'identity'],
    description:
      'On 429 rate_limited and credits_exhausted: whose limit or balance refused the request, the ' +
      "key's own or its identity's (shared by all the identity's keys).",
  })
  scope?: 'key' | 'identity';
}

/** Documents the problem+json answers a route can give, e.g. `@ApiProblems(400, 401, 403)`. */
export function ApiProblems(...statuses: number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: STATUS_CODES[status],
        content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemSchema' } } },
      }),
    ),
  );
}

/**
 * @nestjs/swagger writes `nullable: true` (OpenAPI 3.0); in 3.1 a null is a type like any other:
 * `type: ['string', 'null']` (and `null` among an `enum`'s values), or `anyOf: [<schema>, {type:
 * 'null'}]` around a reference.
 */
function nullableToTypeUnions(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(nullableToTypeUnions);
  if (!node || typeof node !== 'object') return;
  const schema = node as Record<string, unknown>;
  for (const value of Object.values(schema)) nullableToTypeUnions(value);
  if (!('nullable' in schema) || typeof schema.nullable !== 'boolean') return;
  const nullable = schema.nullable;
  delete schema.nullable;
  if (!nullable) return;
  const composed = ['$ref', 'allOf', 'oneOf', 'anyOf'].some((key) => key in schema);
  // An enum lists every value the schema takes, whatever its type says: a nullable one lists null too.
  if (Array.isArray(schema.enum) && !schema.enum.includes(null))
    schema.enum = [...(schema.enum as unknown[]), null];
  if (!composed && typeof schema.type === 'string') {
    schema.type = [schema.type, 'null'];
  } else if (!composed && Array.isArray(schema.type)) {
    if (!schema.type.includes('null')) schema.type = [...(schema.type as string[]), 'null'];
  } else {
    // A reference (or composition) cannot take a null type beside it: null is the other branch.
    const inner = { ...schema };
    for (const key of Object.keys(schema)) if (key !== 'description') delete schema[key];
    delete inner.description;
    schema.anyOf = [inner, { type: 'null' }];
  }
}

type SchemaNode = Record<string, unknown>;

/** Every operation of the document's paths (a path item's values are its operations). */
function operationsOf<T extends object>(document: OpenAPIObject): T[] {
  return Object.values(document.paths).flatMap((item) =>
    (Object.values(item) as unknown[]).filter((value): value is T => !!value && typeof value === 'object'),
  );
}

/** The schema of each media type of each request body, as written (often a `$ref`). */
function requestBodyRoots(document: OpenAPIObject): unknown[] {
  return operationsOf<{ requestBody?: { content?: Record<string, { schema?: unknown }> } }>(document).flatMap(
    (operation) => Object.values(operation.requestBody?.content ?? {}).map((media) => media.schema),
  );
}

/** The component schema a node's `$ref` names, or undefined when it has none. */
function componentOf(document: OpenAPIObject, node: unknown): SchemaNode | undefined {
  const ref = (node as SchemaNode | undefined)?.$ref;
  const schemas = (document.components?.schemas ?? {}) as Record<string, SchemaNode>;
  return typeof ref === 'string' ? schemas[ref.replace('#/components/schemas/', '')] : undefined;
}

/**
 * The global ValidationPipe refuses unknown fields (`forbidNonWhitelisted`) in every body it validates,
 * and in every object nested in it (`NestedObject`, validated through): a fuzzer reading a schema
 * without `additionalProperties: false` sends unknown fields and expects them taken. Closes the DTO
 * schemas request bodies reach: the body's own (a `$ref` to a DTO class; an inline body, such as GitHub's
 * report, is read by its service and stays as documented), and those its properties hold (directly, as
 * array items, or nullable). Not through a hand-written `oneOf`/`anyOf`: such a field is an `@IsObject()`
 * whose shape its service checks, and schemas that say `additionalProperties` already keep it.
 */
function closeRequestBodies(document: OpenAPIObject): void {
  const closed = new Set<SchemaNode>();
  const close = (schema: SchemaNode | undefined): void => {
    if (!schema || closed.has(schema)) return;
    closed.add(schema);
    if (!schema.properties || 'additionalProperties' in schema) return;
    schema.additionalProperties = false;
    for (const property of Object.values(schema.properties as Record<string, SchemaNode>)) {
      // Nullable (`anyOf` with null), and a reference beside other keywords (`allOf` of one).
      const nullable = (property.anyOf as SchemaNode[] | undefined)?.filter(
        (branch) => branch.type !== 'null',
      );
      const held = nullable?.length === 1 ? nullable[0] : property;
      const wrapped = held.allOf as SchemaNode[] | undefined;
      const inner = wrapped?.length === 1 ? wrapped[0] : held;
      close(componentOf(document, inner) ?? componentOf(document, inner.items));
    }
  };
  for (const root of requestBodyRoots(document)) close(componentOf(document, root));
}

/** Every schema a request body's schema reaches, each once: through `$ref`s, properties, items, compositions. */
function requestBodySchemas(document: OpenAPIObject): SchemaNode[] {
  const reached = new Set<SchemaNode>();
  const visit = (node: unknown): void => {
    if (!node || typeof node !== 'object' || reached.has(node as SchemaNode)) return;
    const schema = node as SchemaNode;
    reached.add(schema);
    visit(componentOf(document, schema));
    Object.values((schema.properties as Record<string, SchemaNode>) ?? {}).forEach(visit);
    visit(schema.items);
    visit(schema.additionalProperties);
    for (const keyword of ['allOf', 'anyOf', 'oneOf']) ((schema[keyword] as unknown[]) ?? []).forEach(visit);
  };
  requestBodyRoots(document).forEach(visit);
  return [...reached];
}

/**
 * A field the server fills in when a request leaves it out (a new key's `enabled`, a verify's `cost`)
 * says so in its description, not as a JSON Schema `default`: generators read a `default` as "always
 * present" (openapi-typescript, by default, makes the field required), which turns an optional field
 * into one every caller must send. In a PATCH body a default would also tell a client to send it, and
 * undo what the request did not name (issue 20).
 */
function describeRequestDefaults(document: OpenAPIObject): void {
  for (const schema of requestBodySchemas(document)) {
    if (!('default' in schema)) continue;
    const said = `Default: \`${JSON.stringify(schema.default)}\`.`;
    delete schema.default;
    schema.description = schema.description ? `${String(schema.description)} ${said}` : said;
  }
}

/**
 * A list in a query is read comma-separated (`?expand=actor,key`, also taken repeated): the document
 * says `style: form, explode: false`, so that a generated client sends the form the server documents
 * and a validator reads `actor,key` as two values, not one.
 */
function commaSeparatedQueryLists(document: OpenAPIObject): void {
  for (const operation of operationsOf<{ parameters?: SchemaNode[] }>(document)) {
    for (const parameter of operation.parameters ?? []) {
      if (parameter.in !== 'query' || (parameter.schema as SchemaNode | undefined)?.type !== 'array')
        continue;
      parameter.style = 'form';
      parameter.explode = false;
    }
  }
}

/** Marks an operation `@Public()` routes carry until finishOpenApiDocument gives it `security: []`. */
export const PUBLIC_OPERATION = 'x-gatehouse-public';
/** The operator's bearer secret (METRICS_TOKEN), a scheme of its own: no organization holds it. */
export const OPERATOR_SCHEME = 'operator';

/** Response headers, documented once in `components.headers`. */
const RATE_LIMIT_HEADERS = Object.fromEntries(
  (['', '-hour'] as const).flatMap((window) => {
    const span = window ? 'hour' : 'minute';
    return [
      [`X-RateLimit-Limit${window}`, `Requests the key may make per ${span}.`],
      [`X-RateLimit-Remaining${window}`, `Requests left in the current ${span} window.`],
      [`X-RateLimit-Reset${window}`, `Seconds until the current ${span} window ends.`],
    ];
  }),
);
const HEADERS: Record<string, { description: string; schema: { type: 'string' | 'integer' } }> = {
  'X-Request-Id': {
    description: "The id of this request (the caller's own if it sent a plain one), also in error bodies.",
    schema: { type: 'string' },
  },
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' } },
  ...Object.fromEntries(
    Object.entries(RATE_LIMIT_HEADERS).map(([name, description]) => [
      name,
      { description: `${description} Sent on answers to an API key.`, schema: { type: 'integer' as const } },
    ]),
  ),
};

type Operation = {
  security?: unknown[];
  responses?: Record<string, { headers?: Record<string, unknown> }>;
} & Record<string, unknown>;

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/**
 * What the decorators cannot say per route, derived from each operation's access level so it cannot
 * drift: public operations need no security (the document's default is any of the three ways to
 * present a credential); every response carries `X-Request-Id`; behind the key check, answers carry
 * the key's budget, and 429s and 503s say when to retry.
 */
export function finishOpenApiDocument(document: OpenAPIObject): OpenAPIObject {
  nullableToTypeUnions(document);
  closeRequestBodies(document);
  describeRequestDefaults(document);
  commaSeparatedQueryLists(document);
  document.components = { ...document.components, headers: { ...document.components?.headers, ...HEADERS } };
  for (const operation of operationsOf<Operation>(document)) {
    if (!('responses' in operation)) continue;
    const isPublic = operation[PUBLIC_OPERATION] === true;
    delete operation[PUBLIC_OPERATION];
    if (isPublic) operation.security ??= [];
    for (const [status, response] of Object.entries(operation.responses ?? {})) {
      const headers: Record<string, unknown> = { 'X-Request-Id': headerRef('X-Request-Id') };
      const code = Number(status);
      if (!isPublic && ((code >= 200 && code < 300) || code === 429)) {
        for (const name of Object.keys(RATE_LIMIT_HEADERS)) headers[name] = headerRef(name);
      }
      if (code === 429 || code === 503) headers['Retry-After'] = headerRef('Retry-After');
      response.headers = { ...response.headers, ...headers };
    }
  }
  return document;
}

const SIGNATURE_HEADERS = [
  ['webhook-id', 'The event id (`evt_…`): the same on every retry, so receivers can deduplicate.'],
  ['webhook-timestamp', 'Unix seconds when this attempt was signed.'],
  [
    'webhook-signature',
    '`v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>` under the endpoint secret (Standard Webhooks).',
  ],
] as const;

/** `key.created` → `keyCreatedWebhook`: camelCase, as the paths' operation ids (see operation-ids.ts). */
const webhookOperationId = (event: string): string =>
  `${event.replace(/[._]([a-z0-9])/g, (_, letter: string) => letter.toUpperCase())}Webhook`;

/**
 * The document's `webhooks`: one entry per event, the body Gatehouse POSTs (`{type, timestamp,
 * data}`) with `data` the event's payload schema, and the Standard Webhooks signature headers.
 */
export function describeWebhooks(
  document: OpenAPIObject,
  payloads: Readonly<Record<string, { name: string }>>,
): OpenAPIObject {
  document.webhooks = Object.fromEntries(
    Object.entries(payloads).map(([event, payload]) => [
      event,
      {
        post: {
          summary: `${event} event`,
          operationId: webhookOperationId(event),
          tags: ['webhooks'],
          security: [],
          parameters: SIGNATURE_HEADERS.map(([name, description]) => ({
            name,
            in: 'header',
            required: true,
            description,
            schema: { type: 'string' },
          })),
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['type', 'timestamp', 'data'],
                  properties: {
                    type: { type: 'string', const: event },
                    timestamp: {
                      type: 'string',
                      format: 'date-time',
                      description: 'When the event happened.',
                    },
                    data: { $ref: `#/components/schemas/${payload.name}` },
                  },
                },
              },
            },
          },
          responses: {
            '2XX': { description: 'Delivered: any 2xx answer within OUTBOUND_TIMEOUT_MS.' },
            '4XX': {
              description: 'Not delivered: retried with exponential backoff, like a 5xx or no answer.',
            },
          },
        },
      },
    ]),
  ) as OpenAPIObject['webhooks'];
  return document;
}

/**
 * Lists the values a string property takes, when only the running app knows them (the agent types
 * registered by every module, a platform team's included).
 */
export function enumerateProperty(
  document: OpenAPIObject,
  [schema, property]: [string, string],
  values: readonly string[],
): void {
  const target = (document.components?.schemas?.[schema] as { properties?: Record<string, object> })
    ?.properties?.[property];
  if (!target) throw new Error(`OpenAPI: no property ${schema}.${property} to enumerate`);
  Object.assign(target, { enum: [...values] });
}
