import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { buildDataSourceOptions } from './data-source-options';
// Registers the translation of driver errors (unreachable database, unstorable text) into domain errors.
import './database-errors';
import { DatabaseEndpoint } from './database-endpoint';

@Module({
  providers: [DatabaseEndpoint],
  exports: [DatabaseEndpoint],
})
export class DatabaseEndpointModule {}

/** TypeORM over `pg`, on PostgreSQL or embedded PGlite; migrations run at start, never `synchronize`. */
@Module({})
export class DatabaseModule {
  static forRoot(): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        DatabaseEndpointModule,
        TypeOrmModule.forRootAsync({
          imports: [DatabaseEndpointModule],
          inject: [APP_CONFIG, DatabaseEndpoint],
          useFactory: async (config: AppConfig, endpoint: DatabaseEndpoint) => {
            await endpoint.open();
            return {
              ...buildDataSourceOptions({
                url: endpoint.url,
                // PGlite is one session and pglite-socket can interleave the protocol messages of two
                // connections (see EmbeddedPostgres): one connection, and `pg` queues the rest.
                poolSize: endpoint.isEmbedded ? 1 : config.DATABASE_POOL_SIZE,
              }),
              retryAttempts: 3,
              retryDelay: 1000,
            };
          },
        }),
      ],
      exports: [DatabaseEndpointModule],
    };
  }
}
