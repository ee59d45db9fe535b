import Ajv from 'ajv';
import { CORE_SCHEMA, load, mergeTag } from 'js-yaml';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `npm run compose:check`: validates compose.yaml as `docker compose config -q` would, without Docker
 * (there is no daemon in CI, and `docker compose` is not installed): the YAML read with merge keys, the
 * variables interpolated by the Compose Specification's rules, and the result checked against the
 * specification's JSON schema (scripts/compose-spec/compose-spec.json, vendored: see its README.md).
 *
 * A `${VAR:?message}` is a variable compose refuses to start without. The check interpolates with a value
 * for each such variable, and reports them, so a test can hold them to what production requires.
 */

const ROOT = join(__dirname, '..');
export const COMPOSE_FILE = join(ROOT, 'compose.yaml');
const SCHEMA_FILE = join(__dirname, 'compose-spec', 'compose-spec.json');

export interface ComposeCheck {
  /** The file after interpolation (undefined when a required variable was missing). */
  model?: Record<string, unknown>;
  /** Schema violations, one line each (`/services/api-1/ports/0: must be string`). */
  schemaErrors: string[];
  /** `${VAR:?…}`/`${VAR?…}` variables the environment lacked, with compose's message for each. */
  missing: Map<string, string>;
  /** Every variable the file requires (`:?` or `?`), whether given or not. */
  required: Set<string>;
}

/** The YAML as compose reads it: YAML 1.2 core types, `<<` merge keys. */
export function readComposeYaml(text: string): Record<string, unknown> {
  return load(text, { schema: CORE_SCHEMA.withTags(mergeTag) }) as Record<string, unknown>;
}

// ${NAME}, ${NAME<op><word>} with op one of :- - :? ? :+ +, $NAME, and $$ (a literal $).
const VARIABLE = /\$(?:(\$)|\{([A-Za-z_]\w*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_]\w*))/g;

/** One string interpolated by the Compose Specification's rules (interpolation.md). */
export function interpolate(
  value: string,
  env: Record<string, string | undefined>,
  found: { missing: Map<string, string>; required: Set<string> },
): string {
  return value.replace(VARIABLE, (whole, dollar, braced, operator, word, bare) => {
    if (dollar) return '$';
    const name = (braced ?? bare) as string;
    const current = env[name];
    const unset = current === undefined;
    const empty = unset || current === '';
    switch (operator as string | undefined) {
      case ':-':
        return empty ? word : current;
      case '-':
        return unset ? word : current;
      case ':?':
      case '?':
        found.required.add(name);
        if (operator === ':?' ? empty : unset) {
          found.missing.set(name, word || `required variable ${name} is missing a value`);
          return '';
        }
        return current!;
      case ':+':
        return empty ? '' : word;
      case '+':
        return unset ? '' : word;
      default:
        return current ?? '';
    }
  });
}

function interpolateTree(
  node: unknown,
  env: Record<string, string | undefined>,
  found: ComposeCheck,
): unknown {
  if (typeof node === 'string') return interpolate(node, env, found);
  if (Array.isArray(node)) return node.map((item) => interpolateTree(item, env, found));
  if (node && typeof node === 'object') {
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) => [key, interpolateTree(value, env, found)]),
    );
  }
  return node;
}

let validator: ReturnType<Ajv['compile']> | undefined;

function schemaValidator(): ReturnType<Ajv['compile']> {
  // The file names draft-07 as https://json-schema.org/draft-07/schema, which ajv knows under its http
  // address: without `$schema` ajv reads it as draft-07, its default, and checks it against that meta-schema.
  // strict: false: the schema uses annotations ajv does not know (`deprecated`).
  const { $schema: _draft, ...schema } = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as Record<
    string,
    unknown
  >;
  validator ??= new Ajv({ allErrors: true, strict: false }).compile(schema);
  return validator;
}

/** `text` (a compose file) interpolated with `env` and validated against the Compose Specification. */
export function checkCompose(text: string, env: Record<string, string | undefined>): ComposeCheck {
  const found: ComposeCheck = { schemaErrors: [], missing: new Map(), required: new Set() };
  const model = interpolateTree(readComposeYaml(text), env, found) as Record<string, unknown>;
  if (found.missing.size) return found;
  const validate = schemaValidator();
  if (!validate(model)) {
    found.schemaErrors = (validate.errors ?? []).map(
      (error) =>
        `${error.instancePath || '/'}: ${error.message ?? 'invalid'} ${JSON.stringify(error.params)}`,
    );
  }
  return { ...found, model };
}

/** A value for every variable the file requires, long enough for any secret: the file's shape, not its secrets. */
export function exampleValuesFor(text: string): Record<string, string> {
  const { required } = checkCompose(text, {});
  return Object.fromEntries(
    [...required].map((name) => [name, `${name.toLowerCase()}0123456789abcdef0123456789`]),
  );
}

function main(): number {
  const text = readFileSync(COMPOSE_FILE, 'utf8');
  const withoutValues = checkCompose(text, {});
  const result = checkCompose(text, exampleValuesFor(text));
  if (result.schemaErrors.length) {
    console.error(
      `compose.yaml does not follow the Compose Specification:\n${result.schemaErrors.join('\n')}`,
    );
    return 1;
  }
  const services = Object.keys((result.model?.services ?? {}) as object);
  console.error(
    `compose.yaml follows the Compose Specification (services: ${services.join(', ')}); ` +
      `compose refuses to start without ${[...withoutValues.missing.keys()].join(', ')}`,
  );
  return 0;
}

if (require.main === module) process.exit(main());
