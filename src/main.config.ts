import { AppConfig, loadAppConfig } from './config/app-config';
import { ConfigurationError } from './config/environment';
import { configsOf, type GatehouseExtension } from './extension';
import { EXTENSIONS } from './extensions';
import { readDotEnv } from './dot-env';

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
