import { resolve } from 'node:path';
import { EnvironmentVariables, validateEnvironment } from './environment';
import { loadOrCreateLocalSecret } from './local-secrets';

/**
 * The validated environment of one instance, secrets always present. Providers do not inject it: they
 * inject their slice (src/config/namespaces.ts). The entry points and the tests read it whole.
 */
export type AppConfig = Readonly<
  Omit<EnvironmentVariables, 'TOKEN_SIGNING_SECRET' | 'API_KEY_HASH_SECRET' | 'AUDIT_CHAIN_SECRET'> & {
    TOKEN_SIGNING_SECRET: string;
    API_KEY_HASH_SECRET: string;
    AUDIT_CHAIN_SECRET: string;
  }
>;

export function loadAppConfig(raw: Record<string, string | undefined> = process.env): AppConfig {
  const env = validateEnvironment(raw);
  const dataDir = resolve(env.DATA_DIR);
  return Object.freeze({
    ...env,
    DATA_DIR: dataDir,
    TOKEN_SIGNING_SECRET:
      env.TOKEN_SIGNING_SECRET ?? loadOrCreateLocalSecret(dataDir, 'TOKEN_SIGNING_SECRET'),
    API_KEY_HASH_SECRET: env.API_KEY_HASH_SECRET ?? loadOrCreateLocalSecret(dataDir, 'API_KEY_HASH_SECRET'),
    AUDIT_CHAIN_SECRET: env.AUDIT_CHAIN_SECRET ?? loadOrCreateLocalSecret(dataDir, 'AUDIT_CHAIN_SECRET'),
  });
}
