import { DataSource } from 'typeorm';
import type { ExtensionMigration } from '../extension';
import { buildDataSourceOptions } from './data-source-options';

/**
 * Runs the migrations on a connection of their own, without the statement timeout requests get, since
 * one may rewrite a large table for longer than any request may take. The app runs it before its pool
 * opens, with its extensions' migrations; the test run uses it to migrate its template database once
 * (the core's only: an app with extensions runs theirs on its copy at start).
 */
export async function runMigrations(
  url: string,
  extensionMigrations: readonly ExtensionMigration[] = [],
): Promise<void> {
  // buildDataSourceOptions sets migrationsRun: initializing is migrating.
  const migrator = new DataSource(buildDataSourceOptions({ url, poolSize: 1, extensionMigrations }));
  await migrator.initialize();
  await migrator.destroy();
}
