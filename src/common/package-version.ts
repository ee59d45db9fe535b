import { readFileSync } from 'node:fs';
import { join } from 'node:path';

let version: string | undefined;

/**
 * This server's version, package.json's (src/common/ and dist/common/ both sit two folders below it). Read
 * on first use, not at import: a build laid out elsewhere (the benchmarks compile src/ into a folder of
 * their own) loads this module without ever asking.
 */
export function packageVersion(): string {
  version ??= (
    JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }
  ).version;
  return version;
}
