import type { DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';

export interface DataSourceSettings {
  url: string;
  poolSize: number;
}

/** One definition for the app, the tests and the migration CLI (`ormconfig.ts`). */
export function buildDataSourceOptions({ url, poolSize }: DataSourceSettings): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsRun: true,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
    extra: {
      max: poolSize,
      // Fail fast instead of hanging when the database is unreachable; the filter answers 503.
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 30000,
      application_name: 'gatehouse',
    },
  };
}
