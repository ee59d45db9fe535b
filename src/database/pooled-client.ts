import { Client } from 'pg';

/**
 * The client class of the application's connection pools (given to pg-pool as its documented `Client`
 * option through TypeORM's `extra`): a pg client that listens for 'error' for its whole life.
 *
 * Why: pg reports a connection the server ends (57P01 "terminating connection due to administrator
 * command" when PostgreSQL shuts down or an operator runs pg_terminate_backend) as an 'error' event when
 * no query is running on it, and pg-pool takes its own listener off a client while the client is checked
 * out, leaving the event to whoever holds it. TypeORM's query runner listens, but a checked-out client it
 * has not wrapped yet (or one held by any other code) has no listener, and an 'error' event with none is
 * an uncaught exception that ends the process: seen once in the PostgreSQL outage suite.
 *
 * The listener has nothing else to do: the query in flight rejects on its own, pg marks the client not
 * queryable, so the pool discards it when it comes back, and the pool's and TypeORM's own listeners
 * still hear the error (the pool logs it through TypeORM's `poolErrorHandler`).
 */
export class PooledClient extends Client {
  constructor(config?: ConstructorParameters<typeof Client>[0]) {
    super(config);
    this.on('error', () => undefined);
  }
}
