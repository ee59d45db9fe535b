import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';

/**
 * Variables from `.env` in the working directory, if there is one. Apart from main.config.ts, which loads
 * the whole configuration, so that the telemetry bootstrap can read it before anything else is loaded.
 */
export function readDotEnv(path = resolve('.env')): Record<string, string> {
  try {
    return parseEnv(readFileSync(path, 'utf8')) as Record<string, string>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
}
