import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import type { PoolClient } from 'pg';
import { PooledClient } from '../../src/database/pooled-client';
import { ServiceContext, startFeatureContext } from '../support/feature-context';

/**
 * A connection the server ends while it is checked out and idle (what a PostgreSQL shutdown does to
 * every connection: FATAL 57P01) must not end the process. pg reports it as an 'error' event on the
 * client, and pg-pool takes its own listener off a checked-out client; the client class the pool makes
 * (PooledClient) keeps one. Without it this spec fails with jest's "Unhandled error" on the FATAL.
 * PGlite has one backend and nothing to terminate, so the spec runs on a PostgreSQL server only.
 */
const onServer = Boolean(process.env.DATABASE_URL);
(onServer ? describe : describe.skip)('pooled connections the server ends', () => {
  let context: ServiceContext;
  let dataSource: DataSource;

  beforeAll(async () => {
    // Straight to the server, also on a run through a transaction pooler: the server ends a connection
    // of the app's own here, where a pooler would end only its own connection and keep the app's.
    context = await startFeatureContext({ imports: [], env: { DATABASE_POOLER: 'none' } });
    dataSource = context.get(DataSource);
  });
  afterAll(() => context?.close());

  it('survive a FATAL on a checked-out idle connection; the pool drops it and the next query gets a new one', async () => {
    // A raw checkout: no query runner has put its own 'error' listener on this client.
    const [client, release] = (await (dataSource.driver as PostgresDriver).obtainMasterConnection()) as [
      PoolClient,
      (error?: Error) => void,
    ];
    let released = false;
    try {
      expect(client).toBeInstanceOf(PooledClient);
      const {
        rows: [{ pid }],
      } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));

      const [{ terminated }] = await dataSource.query<{ terminated: boolean }[]>(
        'SELECT pg_terminate_backend($1) AS terminated',
        [pid],
      );
      expect(terminated).toBe(true);
      await ended;

      // Back in the pool, the dead client is discarded rather than handed out again.
      release();
      released = true;
      const [{ now }] = await dataSource.query<{ now: number }[]>('SELECT pg_backend_pid() AS now');
      expect(now).not.toBe(pid);
    } finally {
      // A client never released would hold the pool's end (afterAll) until jest's timeout.
      if (!released) release();
    }
  });
});
