import { AppConfig, loadAppConfig } from './config/app-config';
import { ConfigurationError } from './config/environment';

/** Validated configuration, or exit 1 with a message naming each bad variable. */
export function loadConfigOrExit(): AppConfig {
  try {
    return loadAppConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigurationError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
}
