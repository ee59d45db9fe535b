import { DataSource } from 'typeorm';
import type { ExtensionMigration } from '../extension';
import { buildDataSourceOptions } from './data-source-options';

/**
 * The session-level advisory lock migrations run under (any fixed number; it shows in pg_locks as
 * objid 1_195_724_105). Instances started together on one database (a deployment's first start, a
 * rolling upgrade) would otherwise each find the same migrations pending and run them at once: with
 * the lock the first runs them, the others wait and then find nothing left to run.
 */
export const MIGRATIONS_LOCK = 1_195_724_105;

/**
 * Runs the migrations on a connection of their own, without the statement timeout requests get, since
 * one may rewrite a large table for longer than any request may take. The app runs it before its pool
 * opens, with its extensions' migrations; the test run uses it to migrate its template database once
 * (the core's only: an app with extensions runs theirs on its copy at start).
 */
export async function runMigrations(
  url: string,
  extensionMigrations: readonly ExtensionMigration[] = [],
  { roleStatementTimeoutMs }: { roleStatementTimeoutMs?: number } = {},
): Promise<void> {
  // One connection: the lock is its session's, and the migrations run on the same connection.
  const migrator = new DataSource({
    ...buildDataSourceOptions({ url, poolSize: 1, extensionMigrations }),
    migrationsRun: false,
  });
  await migrator.initialize();
  try {
    // A role default (below, or an operator's) would apply to this session too.
    await migrator.query('SET statement_timeout = 0');
    await migrator.query('SELECT pg_advisory_lock($1)', [MIGRATIONS_LOCK]);
    await migrator.runMigrations({ transaction: 'each' });
    if (roleStatementTimeoutMs !== undefined) await setRoleStatementTimeout(migrator, roleStatementTimeoutMs);
  } finally {
    // Closing the session releases the lock.
    await migrator.destroy();
  }
}

/**
 * DATABASE_POOLER=transaction: the statement deadline as this role's default in this database, which
 * every new session gets, those a pooler opens included (poolers refuse statement_timeout as a startup
 * parameter). A pooler's sessions opened before keep what they had until it reopens them.
 */
async function setRoleStatementTimeout(migrator: DataSource, ms: number): Promise<void> {
  await migrator.query(
    `DO $$ BEGIN
       EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET statement_timeout = %L',
                      current_database(), '${Math.trunc(ms)}ms');
     END $$`,
  );
}
