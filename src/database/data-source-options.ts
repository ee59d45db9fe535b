import type { DataSourceOptions } from 'typeorm';
import type { ExtensionMigration } from '../extension';
import { MIGRATIONS } from './migrations';
import { PooledClient } from './pooled-client';

export interface DataSourceSettings {
  url: string;
  poolSize: number;
  /** How long a query may wait for a pooled connection before the filter answers 503. */
  connectionTimeoutMs?: number;
  /**
   * Deadline of one statement, enforced by PostgreSQL (statement_timeout): it cancels the statement and
   * the connection stays usable. Unset or 0: none, as for migrations (see DatabaseModule).
   */
  statementTimeoutMs?: number;
  /** Extensions' migrations (src/extension.ts), run with the core's; TypeORM orders all by timestamp. */
  extensionMigrations?: readonly ExtensionMigration[];
}

/**
 * One definition for the app, the tests and the migration CLI (`ormconfig.ts`). Entities are not listed
 * here: the app loads those its modules register with `TypeOrmModule.forFeature` (`autoLoadEntities`),
 * the CLI finds them by file name.
 */
export function buildDataSourceOptions({
  url,
  poolSize,
  connectionTimeoutMs = 5000,
  statementTimeoutMs,
  extensionMigrations = [],
}: DataSourceSettings): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    migrations: [...MIGRATIONS, ...extensionMigrations],
    migrationsRun: true,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
    extra: {
      // Survives the server ending a checked-out connection (see PooledClient).
      Client: PooledClient,
      max: poolSize,
      // Fail fast instead of hanging when the database is unreachable; the filter answers 503.
      connectionTimeoutMillis: connectionTimeoutMs,
      idleTimeoutMillis: 30000,
      application_name: 'gatehouse',
      // Not pg's client-side query_timeout: it gives up on a statement without closing the connection,
      // which could go back to the pool inside a transaction the server still holds open.
      ...(statementTimeoutMs ? { statement_timeout: statementTimeoutMs } : {}),
    },
  };
}
