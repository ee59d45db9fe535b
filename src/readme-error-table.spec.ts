import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AccessDenialCode } from './access/access-denial';
import { ERROR_CATALOGUE } from './common/domain-error';

/** Every `*.errors.ts` under src: each module's codes register themselves in ERROR_CATALOGUE on import. */
function errorModules(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return errorModules(path);
    return name.endsWith('.errors.ts') ? [path] : [];
  });
}

/** The rows of the README's "Errors" table: the first cell's `code`. */
function readmeErrorTable(): Map<string, string> {
  const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n### Errors\n'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| ---')));
  const rows = new Map<string, string>();
  for (const line of table.split('\n')) {
    const match = /^\|\s*`([a-z_]+)`\s*\|\s*(\d{3})/.exec(line);
    if (match) rows.set(match[1], match[2]);
  }
  return rows;
}

describe("the README's error table", () => {
  const modules = errorModules(__dirname);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  for (const path of modules) require(path);
  const documented = readmeErrorTable();

  it('finds the error modules and the table', () => {
    expect(modules.length).toBeGreaterThan(5);
    expect(documented.size).toBeGreaterThan(20);
  });

  it('lists every code a module declares', () => {
    const declared = [...ERROR_CATALOGUE.values()].flatMap((kinds) => Object.keys(kinds));
    expect(declared.filter((code) => !documented.has(code))).toEqual([]);
  });

  it('lists every refusal of the key check', () => {
    expect(Object.values(AccessDenialCode).filter((code) => !documented.has(code))).toEqual([]);
  });
});
