import { resolve } from 'node:path';
import { ConfigurationError, CORE_VARIABLES, EnvironmentVariables, validateEnvironment } from './environment';
import { type ExtensionConfig, readExtensionConfigs } from './extension-config';
import { loadOrCreateLocalSecret } from './local-secrets';

/**
 * The validated environment of one instance, secrets always present. Providers do not inject it: they
 * inject their slice (src/config/namespaces.ts, or an extension's, src/config/extension-config.ts). The
 * entry points and the tests read it whole.
 */
export type AppConfig = Readonly<
  Omit<EnvironmentVariables, 'TOKEN_SIGNING_SECRET' | 'API_KEY_HASH_SECRET' | 'AUDIT_CHAIN_SECRET'> & {
    TOKEN_SIGNING_SECRET: string;
    API_KEY_HASH_SECRET: string;
    AUDIT_CHAIN_SECRET: string;
    /**
     * The variables given that the core does not read, as given: the extensions' configuration is read
     * from them when the modules are built (ExtensionConfigModule), so an extension sees the `.env` and
     * a test's `env` as the core does, and never reads `process.env` itself.
     */
    extensionVariables: Readonly<Record<string, string>>;
  }
>;

/**
 * `extensionConfigs`: the extensions' declared configuration, validated with the core's so that one
 * error lists every bad variable (the entry points pass the deployment's; a test's extensions are
 * validated when its modules are built).
 */
export function loadAppConfig(
  raw: Record<string, string | undefined> = process.env,
  extensionConfigs: readonly ExtensionConfig[] = [],
): AppConfig {
  const env = validateWithExtensions(raw, extensionConfigs);
  const dataDir = resolve(env.DATA_DIR);
  return Object.freeze({
    ...env,
    DATA_DIR: dataDir,
    TOKEN_SIGNING_SECRET:
      env.TOKEN_SIGNING_SECRET ?? loadOrCreateLocalSecret(dataDir, 'TOKEN_SIGNING_SECRET'),
    API_KEY_HASH_SECRET: env.API_KEY_HASH_SECRET ?? loadOrCreateLocalSecret(dataDir, 'API_KEY_HASH_SECRET'),
    AUDIT_CHAIN_SECRET: env.AUDIT_CHAIN_SECRET ?? loadOrCreateLocalSecret(dataDir, 'AUDIT_CHAIN_SECRET'),
    extensionVariables: Object.freeze(
      Object.fromEntries(
        Object.entries(raw).filter(
          (entry): entry is [string, string] => entry[1] !== undefined && !CORE_VARIABLES.includes(entry[0]),
        ),
      ),
    ),
  });
}

/** The core's variables and the extensions', with every bad one of both in one error. */
function validateWithExtensions(
  raw: Record<string, string | undefined>,
  extensionConfigs: readonly ExtensionConfig[],
): EnvironmentVariables {
  const extensionProblems = problemsOf(() => readExtensionConfigs(extensionConfigs, raw));
  const coreProblems = problemsOf(() => validateEnvironment(raw));
  if (coreProblems.length || extensionProblems.length) {
    throw new ConfigurationError([...coreProblems, ...extensionProblems]);
  }
  return validateEnvironment(raw);
}

function problemsOf(validate: () => unknown): string[] {
  try {
    validate();
    return [];
  } catch (error) {
    if (error instanceof ConfigurationError) return error.problems;
    throw error;
  }
}
