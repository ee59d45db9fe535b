import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { accessDenialCodes } from '../../src/access/access-denial';

/** The core's error table lives in the routes and errors guide. */
const CORE_README = join(__dirname, '..', '..', 'docs', 'errors.md');

/**
 * The rows of a page's "Errors" table (the first table after its `## Errors` or `### Errors` heading):
 * each row's `code` and its (first) status. The core's page (docs/errors.md) by default; an extension
 * documents its own codes in a README.md in its folder, next to the code that declares them.
 */
export function readmeErrorTable(readmePath = CORE_README): Map<string, number> {
  const readme = readFileSync(readmePath, 'utf8');
  const heading = /\n#{2,3} Errors\n/.exec(readme);
  if (!heading) throw new Error(`${readmePath} has no "Errors" heading`);
  const section = readme.slice(heading.index);
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| ---')));
  const rows = new Map<string, number>();
  for (const line of table.split('\n')) {
    const match = /^\|\s*`([a-z_]+)`\s*\|\s*(\d{3})/.exec(line);
    if (match) rows.set(match[1], Number(match[2]));
  }
  return rows;
}

/**
 * The refusal codes of the key check declared so far (built-in, and extensions' defineAccessDenial)
 * that a page's table lacks or lists with another status: `code: declared status` each. For an
 * extension: its README and its own codes (`only`), so the core's table never lists an extension's.
 */
export function undocumentedDenialCodes({
  readme,
  only,
}: { readme?: string; only?: readonly string[] } = {}): string[] {
  const documented = readmeErrorTable(readme);
  return [...accessDenialCodes()]
    .filter(([code]) => !only || only.includes(code))
    .filter(([code, { status }]) => documented.get(code) !== status)
    .map(([code, { status }]) => `${code}: ${status}`);
}
