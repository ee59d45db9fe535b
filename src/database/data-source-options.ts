import type { DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from './migrations';

export interface DataSourceSettings {
  url: string;
  poolSize: number;
  /** How long a query may wait for a pooled connection before the filter answers 503. */
  connectionTimeoutMs?: number;
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
}: DataSourceSettings): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    migrations: MIGRATIONS,
    migrationsRun: true,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
    extra: {
      max: poolSize,
      // Fail fast instead of hanging when the database is unreachable; the filter answers 503.
      connectionTimeoutMillis: connectionTimeoutMs,
      idleTimeoutMillis: 30000,
      application_name: 'gatehouse',
    },
  };
}
