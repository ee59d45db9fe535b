import { ConfigOf } from '../config/config-namespace';
import { databaseConfig } from '../config/namespaces';
import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { ExtensionMigration } from '../extension';
import { buildDataSourceOptions } from './data-source-options';
import { runMigrations } from './migrate';
// Registers the translation of driver errors (unreachable database, unstorable text) into domain errors.
import './database-errors';
import { DatabaseEndpoint } from './database-endpoint';

@Module({
  providers: [DatabaseEndpoint],
  exports: [DatabaseEndpoint],
})
export class DatabaseEndpointModule {}

/**
 * TypeORM over `pg`, on PostgreSQL or embedded PGlite; migrations (the core's and the extensions') run at
 * start, never `synchronize`. Entities come from the modules' `TypeOrmModule.forFeature` (autoLoadEntities),
 * an extension's included.
 */
@Module({})
export class DatabaseModule {
  static forRoot({
    extensionMigrations = [],
  }: { extensionMigrations?: readonly ExtensionMigration[] } = {}): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        DatabaseEndpointModule,
        TypeOrmModule.forRootAsync({
          imports: [DatabaseEndpointModule],
          inject: [databaseConfig.KEY, DatabaseEndpoint],
          useFactory: async (config: ConfigOf<typeof databaseConfig>, endpoint: DatabaseEndpoint) => {
            await endpoint.open();
            // Past a pooler in transaction mode the pool cannot carry the deadline as a startup parameter:
            // it becomes the role's default in the database, set on the migrations' direct session.
            const pooled = config.pooler === 'transaction';
            await runMigrations(config.directUrl ?? endpoint.url, extensionMigrations, {
              roleStatementTimeoutMs: pooled ? config.statementTimeoutMs : undefined,
            });
            return {
              ...buildDataSourceOptions({
                url: endpoint.url,
                // PGlite is one session and pglite-socket can interleave the protocol messages of two
                // connections (see EmbeddedPostgres): one connection, and `pg` queues the rest. The task
                // worker holds none while an agent runs (only for its short statements), so requests
                // still get their turn. On a server, requests keep DATABASE_POOL_SIZE connections
                // whatever the task worker (a few on top, however many runs it has in flight: see
                // WORKER_DATABASE_CONNECTIONS) and the webhook loops (one each) are doing.
                poolSize: endpoint.isEmbedded ? 1 : config.poolSize + config.backgroundConnections,
                // With one connection, `pg` applies this timeout to the wait in its queue too. The embedded
                // database is in this process and cannot be unreachable; a busy moment must not turn into 503s.
                connectionTimeoutMs: endpoint.isEmbedded ? 15_000 : undefined,
                // PGlite runs in this process, one statement at a time: nothing remote to wait for. Past
                // a pooler, the role's default carries it (above).
                statementTimeoutMs: endpoint.isEmbedded || pooled ? undefined : config.statementTimeoutMs,
              }),
              migrationsRun: false,
              autoLoadEntities: true,
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
