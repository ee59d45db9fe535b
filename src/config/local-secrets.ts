import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Outside production a developer should not have to invent secrets, yet tokens and key hashes must
 * survive a restart. So a missing secret is generated once and kept in DATA_DIR/secrets.json (mode 0600).
 */
export function loadOrCreateLocalSecret(dataDir: string, name: string): string {
  const file = join(dataDir, 'secrets.json');
  let secrets: Record<string, string> = {};
  try {
    secrets = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (typeof secrets[name] === 'string' && secrets[name].length >= 32) return secrets[name];
  secrets[name] = randomBytes(32).toString('base64url');
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return secrets[name];
}
