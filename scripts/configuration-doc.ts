import 'reflect-metadata';
import { getMetadataStorage } from 'class-validator';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import * as ts from 'typescript';
import {
  CORE_VARIABLES,
  EnvironmentVariables,
  OPTIONAL_WITHOUT_DEFAULT,
  validateEnvironment,
} from '../src/config/environment';

/**
 * `npm run docs:configuration` writes docs/configuration.md; `npm run docs:configuration:check` (CI) fails
 * when the file is not what it would write. Everything in it comes from the code, so it cannot drift: the
 * variables, their rules and defaults from EnvironmentVariables (src/config/environment.ts: the
 * class-validator decorators, the property initialisers and the doc comments), the variables production
 * requires from the validation's own refusals, and the grouping and comments from .env.example.
 */

type ValidationMetadata = ReturnType<
  ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']
>[number];

const ROOT = join(__dirname, '..');
export const CONFIGURATION_DOC = join(ROOT, 'docs', 'configuration.md');
const ENVIRONMENT_SOURCE = join(ROOT, 'src', 'config', 'environment.ts');
const ENV_EXAMPLE = join(ROOT, '.env.example');
const EXTENSIONS_MARKER = /^# -{4} Extensions/m;

/** Headings of .env.example's groups, by the first variable of each; a group not named here is "Other". */
const GROUP_TITLES: Record<string, string> = {
  NODE_ENV: 'Process and logs',
  DATABASE_URL: 'Database',
  REDIS_URL: 'Redis',
  TOKEN_SIGNING_SECRET: 'Secrets',
  BOOTSTRAP_ADMIN_EMAIL: 'First administrator',
  ALLOW_SIGNUP: 'Sign-up and sign-in',
  API_KEY_PREFIX: 'API keys',
  TRUST_PROXY: 'Reverse proxies',
  DEFAULT_REQUESTS_PER_MINUTE: 'Rate limits',
  EXPIRY_WARNING_DAYS: 'Key lifecycle jobs and the audit log',
  USAGE_RETENTION_DAYS: 'Usage',
  MAX_FILE_SIZE: 'Files',
  ALLOW_PRIVATE_NETWORK_TARGETS: 'Outbound calls',
  SECRET_SCANNING_KEYS_URL: 'Leaked keys',
  WORKER_CONCURRENCY: 'Tasks',
  WEBHOOK_WORKERS: 'Webhooks',
  SHUTDOWN_GRACE_MS: 'Shutdown',
  METRICS_TOKEN: 'Metrics',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'Telemetry',
  DASHBOARD_IDLE_MINUTES: 'Dashboard',
};

interface ExampleVariable {
  name: string;
  /** The value .env.example shows (for a commented-out line, an example rather than the default). */
  value: string;
  commentedOut: boolean;
  /** Comment lines between the group's first variable and this one, meant for it. */
  note: string;
}

interface ExampleGroup {
  /** The comment lines that open the group, before its first variable. */
  intro: string;
  variables: ExampleVariable[];
}

const VARIABLE_LINE = /^(#\s?)?([A-Z][A-Z0-9_]*)=(.*)$/;

/** .env.example's paragraphs (separated by blank lines) up to the extensions' part: comments and variables. */
export function exampleGroups(example: string): ExampleGroup[] {
  const core = example.split(EXTENSIONS_MARKER)[0];
  const groups: ExampleGroup[] = [];
  for (const paragraph of core.split(/\n\s*\n/)) {
    const group: ExampleGroup = { intro: '', variables: [] };
    let comment: string[] = [];
    for (const line of paragraph.split('\n').filter((l) => l.trim() !== '')) {
      const variable = VARIABLE_LINE.exec(line);
      if (variable) {
        const note = comment.join(' ');
        if (!group.variables.length) group.intro = note;
        group.variables.push({
          name: variable[2],
          value: variable[3],
          commentedOut: Boolean(variable[1]),
          note: group.variables.length ? note : '',
        });
        comment = [];
      } else comment.push(line.replace(/^#\s?/, ''));
    }
    if (group.variables.length) groups.push(group);
    else if (!groups.length && comment.length) groups.push({ intro: comment.join(' '), variables: [] });
  }
  return groups;
}

/** The doc comment of each property of `EnvironmentVariables`, as one line of text. */
function docComments(): Map<string, string> {
  const source = ts.createSourceFile(
    ENVIRONMENT_SOURCE,
    readFileSync(ENVIRONMENT_SOURCE, 'utf8'),
    ts.ScriptTarget.Latest,
    true,
  );
  const comments = new Map<string, string>();
  const visit = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node) && node.name?.text === 'EnvironmentVariables') {
      for (const member of node.members) {
        if (!ts.isPropertyDeclaration(member) || !ts.isIdentifier(member.name)) continue;
        const text = ts
          .getJSDocCommentsAndTags(member)
          .map((doc) => (typeof doc.comment === 'string' ? doc.comment : ''))
          .join(' ');
        if (text) comments.set(member.name.text, text.replace(/\s+/g, ' ').trim());
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return comments;
}

const code = (text: string): string => `\`${text}\``;
/** Text for markdown: outside code spans, `<` would open an HTML tag (`<prefix>` would vanish). */
const prose = (text: string): string =>
  text
    .split('`')
    .map((part, index) => (index % 2 ? part : part.replace(/</g, '&lt;')))
    .join('`');
const cell = (text: string): string => prose(text).replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** What a variable accepts, in words, from its class-validator rules. */
function acceptedValues(name: string, rules: ValidationMetadata[]): string {
  const rule = (kind: string) => rules.find((r) => r.name === kind);
  const constraint = (kind: string): unknown => rule(kind)?.constraints?.[0];
  const ownMessage = (kind: string): string | undefined => {
    const message = rule(kind)?.message;
    return typeof message === 'string'
      ? message.replace(new RegExp(`^${name} (must )?(be )?`), '')
      : undefined;
  };
  const parts: string[] = [];
  if (rule('isIn')) parts.push(`one of ${(constraint('isIn') as string[]).map(code).join(', ')}`);
  if (rule('isInt')) {
    const [min, max] = [constraint('min'), constraint('max')] as Array<number | undefined>;
    parts.push(min !== undefined && max !== undefined ? `an integer, ${min}–${max}` : 'an integer');
  }
  if (rule('isBoolean'))
    parts.push(
      `${code('true')} or ${code('false')} (also ${code('1')}/${code('0')}, ${code('yes')}/${code('no')})`,
    );
  if (rule('matches')) parts.push(ownMessage('matches') ?? `matching ${code(String(constraint('matches')))}`);
  if (rule('isEmail')) parts.push('an email address');
  if (rule('isUrl')) parts.push(ownMessage('isUrl') ?? 'a URL');
  if (!parts.length && rule('isString')) {
    const [min, max] = [constraint('minLength'), constraint('maxLength')] as Array<number | undefined>;
    const lengths = [
      min !== undefined && min > 1 ? `at least ${min}` : '',
      max !== undefined ? `at most ${max}` : '',
    ]
      .filter(Boolean)
      .join(', ');
    parts.push(lengths ? `text, ${lengths} characters` : min === 1 ? 'text, not empty' : 'text');
  }
  return parts.join('; ');
}

/** The variables NODE_ENV=production refuses to start without, from the validation's own messages. */
function requiredInProduction(): Set<string> {
  try {
    validateEnvironment({ NODE_ENV: 'production' });
    return new Set();
  } catch (error) {
    return new Set(
      [...(error as Error).message.matchAll(/(\w+) must be set when NODE_ENV=production/g)].map((m) => m[1]),
    );
  }
}

function defaultOf(name: string, defaults: Record<string, unknown>, example?: ExampleVariable): string {
  if (OPTIONAL_WITHOUT_DEFAULT.includes(name)) {
    // A commented-out line's value is an example, shown unless it is a placeholder.
    const shown = example?.commentedOut && example.value && !/change-me/.test(example.value);
    return shown ? `unset (e.g. ${code(example.value)})` : 'unset';
  }
  const value = defaults[name];
  return value === '' ? 'empty' : code(String(value));
}

/** docs/configuration.md as it should be, formatted as the repository's prettier would. */
export async function configurationDoc(): Promise<string> {
  const groups = exampleGroups(readFileSync(ENV_EXAMPLE, 'utf8'));
  const defaults = new EnvironmentVariables() as unknown as Record<string, unknown>;
  const metadata = getMetadataStorage().getTargetValidationMetadatas(EnvironmentVariables, '', true, false);
  const comments = docComments();
  const production = requiredInProduction();
  const listed = new Set(groups.flatMap((group) => group.variables.map((v) => v.name)));
  const unlisted = CORE_VARIABLES.filter((name) => !listed.has(name));
  if (unlisted.length) throw new Error(`.env.example does not list ${unlisted.join(', ')}`);

  const row = (variable: ExampleVariable): string => {
    const { name } = variable;
    const rules = metadata.filter((m) => m.propertyName === name);
    const required = production.has(name) ? '**required** in production; ' : '';
    const optional = rules.some((r) => r.name === 'isOptional') && !production.has(name) ? 'optional; ' : '';
    const choices = rules.find((r) => r.name === 'isIn')?.constraints?.[0] as string[] | undefined;
    // A note that only lists the choices (`fatal | error | …`) says what "Accepts" says.
    const listsChoices =
      choices &&
      variable.note
        .split('|')
        .map((s) => s.trim())
        .join() === choices.join();
    const description = comments.get(name) ?? (listsChoices ? '' : variable.note);
    return `| ${code(name)} | ${cell(defaultOf(name, defaults, variable))} | ${cell(required + optional + acceptedValues(name, rules))} | ${cell(description)} |`;
  };

  // .env.example's opening comment (before any variable) says what the introduction below says.
  const variableGroups = groups.filter((group) => group.variables.length);
  const lines: string[] = [
    '# Configuration',
    '',
    '<!-- Generated by `npm run docs:configuration` from src/config/environment.ts and .env.example: edit those, not this file. -->',
    '',
    'Every variable Gatehouse reads, generated from the schema that validates it (`EnvironmentVariables` in',
    '[src/config/environment.ts](../src/config/environment.ts): its rules, defaults and comments) and the groups and',
    'comments of [.env.example](../.env.example), so it cannot drift: CI fails when this file is not what',
    '`npm run docs:configuration` writes.',
    '',
    'Variables come from the environment, and from a `.env` file in the working directory when there is one (a',
    'variable set in the environment wins over the same one in `.env`). They are validated at start: a bad value',
    'stops the process with one line naming it (`Invalid configuration: PORT must be an integer number`), one line',
    'per bad variable, and so does a `DATABASE_URL` or `REDIS_URL` that cannot be reached. With',
    `\`NODE_ENV=production\`, ${[...production].map(code).join(', ')} must be set, and a value that looks like a`,
    'placeholder (`change-me`, `example`, `xxxx`, …) is refused, as is such a `BOOTSTRAP_ADMIN_PASSWORD`. Running in',
    'production: [production.md](production.md).',
    '',
  ];
  for (const group of variableGroups) {
    const title = GROUP_TITLES[group.variables[0].name] ?? 'Other settings';
    lines.push(`## ${title}`, '');
    if (group.intro) lines.push(prose(group.intro), '');
    lines.push('| Variable | Default | Accepts | Description |', '| --- | --- | --- | --- |');
    lines.push(...group.variables.map(row), '');
  }

  // The core's variables only: this page must not depend on which extensions a deployment lists (CI runs the
  // suite with the examples in the list), and .env.example, which a test holds to the list, names theirs.
  lines.push(
    '## Extensions',
    '',
    "Each extension in the deployment's list ([src/extensions.ts](../src/extensions.ts)) declares its own variables",
    '(src/config/extension-config.ts), each starting with its name in capitals. They are read from the same `.env`',
    "and environment, validated at the same start (one error lists every bad variable, the core's and the",
    "extensions'), and listed in .env.example under the extension's name (a test fails on one missing there); the",
    'example extensions (examples/extensions/) have theirs at the end of .env.example.',
    '',
  );

  const options = (await resolveConfig(CONFIGURATION_DOC)) ?? {};
  return format(lines.join('\n'), { ...options, filepath: CONFIGURATION_DOC });
}

async function main(): Promise<number> {
  const expected = await configurationDoc();
  const check = process.argv.indexOf('--check');
  if (check >= 0) {
    // `--check [file]`: the file to compare, docs/configuration.md unless given (a test gives a changed copy).
    const file = process.argv[check + 1] ?? CONFIGURATION_DOC;
    let current = '';
    try {
      current = readFileSync(file, 'utf8');
    } catch {
      // Missing: not current.
    }
    if (current === expected) return 0;
    console.error(
      `${file} is not current: run \`npm run docs:configuration\` and commit docs/configuration.md`,
    );
    return 1;
  }
  writeFileSync(CONFIGURATION_DOC, expected);
  return 0;
}

if (require.main === module) {
  main().then(
    (status) => process.exit(status),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
