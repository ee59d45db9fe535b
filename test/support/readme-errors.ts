import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { accessDenialCodes } from '../../src/access/access-denial';

/** The rows of the README's "Errors" table: each row's `code` and its (first) status. */
export function readmeErrorTable(): Map<string, number> {
  const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n### Errors\n'));
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
 * that the README's table lacks or lists with another status: `code: declared status` each.
 */
export function undocumentedDenialCodes(): string[] {
  const documented = readmeErrorTable();
  return [...accessDenialCodes()]
    .filter(([code, { status }]) => documented.get(code) !== status)
    .map(([code, { status }]) => `${code}: ${status}`);
}
