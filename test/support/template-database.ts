import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedPostgres } from '../../src/database/embedded-postgres';
import { runMigrations } from '../../src/database/migrate';
import { runDatabasePrefix, withDatabaseName, withServer } from './test-database';

/**
 * Migrating a fresh database is most of the cost of booting a test instance. A run migrates once, in the
 * global setup, and every instance starts from a copy: `CREATE DATABASE … TEMPLATE` on PostgreSQL, a copy of
 * the data directory on PGlite. The app still runs its migrations at start; they find nothing to do.
 */

export function templateDatabaseName(runId: string): string {
  return `${runDatabasePrefix(runId)}template`;
}

/** Creates and migrates the run's template database on the PostgreSQL server; returns its name. */
export async function createPostgresTemplate(serverUrl: string, runId: string): Promise<string> {
  const name = templateDatabaseName(runId);
  await withServer(serverUrl, (client) => client.query(`CREATE DATABASE "${name}"`));
  // Every connection to it is closed when this returns: CREATE DATABASE … TEMPLATE refuses a template in use.
  await runMigrations(withDatabaseName(serverUrl, name));
  return name;
}

/** Migrates a PGlite data directory once; instances copy its `pglite` folder. Returns the directory. */
export async function createEmbeddedTemplate(): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-template-'));
  const database = await EmbeddedPostgres.start(dataDir, 1);
  try {
    await runMigrations(database.url);
  } finally {
    await database.stop();
  }
  return dataDir;
}

/** Gives a new, empty data directory the migrated embedded database of the run, when there is one. */
export function copyEmbeddedTemplate(dataDir: string): void {
  const template = process.env.GATEHOUSE_TEST_PGLITE_TEMPLATE;
  if (!template || !existsSync(join(template, 'pglite'))) return;
  cpSync(join(template, 'pglite'), join(dataDir, 'pglite'), { recursive: true });
}

export function removeEmbeddedTemplate(): void {
  const template = process.env.GATEHOUSE_TEST_PGLITE_TEMPLATE;
  if (template) rmSync(template, { recursive: true, force: true });
}
