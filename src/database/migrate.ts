import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from './data-source-options';

/**
 * Runs the migrations on a connection of their own, without the statement timeout requests get, since
 * one may rewrite a large table for longer than any request may take. The app runs it before its pool
 * opens; the test run uses it to migrate its template database once.
 */
export async function runMigrations(url: string): Promise<void> {
  // buildDataSourceOptions sets migrationsRun: initializing is migrating.
  const migrator = new DataSource(buildDataSourceOptions({ url, poolSize: 1 }));
  await migrator.initialize();
  await migrator.destroy();
}
