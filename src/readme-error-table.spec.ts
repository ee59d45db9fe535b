import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readmeErrorTable, undocumentedDenialCodes } from '../test/support/readme-errors';
import { AccessDenialCode, accessDenialCodes, defineAccessDenial } from './access/access-denial';
import { ERROR_CATALOGUE } from './common/domain-error';

/**
 * Every `*.errors.ts` of the core under src: each module's codes register themselves in ERROR_CATALOGUE on
 * import. An extension's folder (it holds its `*.extension.ts`) is left out, wherever a deployment keeps it:
 * its codes are in its own README.md, which its own test checks (docs/extending.md).
 */
function errorModules(dir: string): string[] {
  const names = readdirSync(dir);
  if (names.some((name) => name.endsWith('.extension.ts'))) return [];
  return names.flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return errorModules(path);
    return name.endsWith('.errors.ts') ? [path] : [];
  });
}

describe('the error table of docs/errors.md', () => {
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

  it('lists every refusal of the key check, with its status', () => {
    expect([...accessDenialCodes().keys()]).toEqual(expect.arrayContaining(Object.values(AccessDenialCode)));
    expect(undocumentedDenialCodes()).toEqual([]);
  });

  it("catches an extension's refusal code the table lacks (extensions are checked in their own tests)", () => {
    defineAccessDenial('undocumented_probe', { status: 409, audited: false });
    expect(undocumentedDenialCodes()).toEqual(['undocumented_probe: 409']);
  });
});
