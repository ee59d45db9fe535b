import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from './src/database/data-source-options';
import { migrationsOf } from './src/extension';
import { EXTENSIONS } from './src/extensions';

/**
 * The DataSource the TypeORM CLI uses to generate and run migrations:
 *   DATABASE_URL=postgres://... npm run migration:generate -- src/database/migrations/Name
 * The app builds its own from the same options (src/database/database.module.ts).
 */
export default new DataSource({
  ...buildDataSourceOptions({
    url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/gatehouse_dev',
    poolSize: 2,
    // The deployment's extensions' migrations too, so the CLI sees the schema the app migrates to.
    extensionMigrations: migrationsOf(EXTENSIONS),
  }),
  // The app registers entities per module (autoLoadEntities); the CLI reads every entity file.
  entities: [`${__dirname}/src/**/*.entity.{ts,js}`],
  migrationsRun: false,
});
