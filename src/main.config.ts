import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { AppConfig, loadAppConfig } from './config/app-config';
import { ConfigurationError } from './config/environment';
import { configsOf, type GatehouseExtension } from './extension';
import { EXTENSIONS } from './extensions';

/** Variables from `.env` in the working directory, if there is one. */
export function readDotEnv(path = resolve('.env')): Record<string, string> {
  try {
    return parseEnv(readFileSync(path, 'utf8')) as Record<string, string>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
}

/**
 * Validated configuration from `.env` and the environment (a variable set in the environment wins
 * over the same one in `.env`), the core's and the extensions' together, or exit 1 with a message
 * naming each bad variable.
 */
export function loadConfigOrExit(extensions: readonly GatehouseExtension[] = EXTENSIONS): AppConfig {
  try {
    return loadAppConfig({ ...readDotEnv(), ...process.env }, configsOf(extensions));
  } catch (error) {
    if (error instanceof ConfigurationError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
}
