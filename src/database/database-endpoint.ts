import { ConfigOf } from '../config/config-namespace';
import { databaseConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { EmbeddedPostgres } from './embedded-postgres';

/**
 * Where the database is: DATABASE_URL when set, otherwise an embedded PGlite under DATA_DIR that this
 * provider starts and, at shutdown, stops after the connection pool is closed.
 */
@Injectable()
export class DatabaseEndpoint implements OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  private embedded?: EmbeddedPostgres;
  url: string;

  constructor(
    @Inject(databaseConfig.KEY) private readonly config: ConfigOf<typeof databaseConfig>,
    private readonly moduleRef: ModuleRef,
  ) {}

  async open(): Promise<void> {
    if (this.config.url) {
      this.url = this.config.url;
      return;
    }
    this.embedded = await EmbeddedPostgres.start(this.config.dataDir, this.config.poolSize + 2);
    this.url = this.embedded.url;
    this.logger.log(
      `embedded PostgreSQL (PGlite) in ${this.config.dataDir}, on the socket ${this.embedded.socketPath}`,
    );
    const fallback = this.embedded.socketOutsideDataDirBecause;
    if (fallback)
      this.logger.warn(`${fallback}: the embedded database's socket is ${this.embedded.socketPath}`);
  }

  get isEmbedded(): boolean {
    return this.embedded !== undefined;
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.embedded) return;
    // Close the pool first: PGlite must not disappear under open connections.
    const dataSource = this.moduleRef.get(DataSource, { strict: false });
    if (dataSource?.isInitialized) await dataSource.destroy();
    await this.embedded.stop();
    this.embedded = undefined;
  }
}
