import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** This server's version, package.json's (src/common/ and dist/common/ both sit two folders below it). */
export const PACKAGE_VERSION: string = (
  JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }
).version;
