import { randomBytes } from 'node:crypto';
import { assertTestDatabaseName, withServer } from './test-database';

/**
 * With DATABASE_URL set, e2e suites run against that PostgreSQL server: each app instance gets a fresh
 * database created from it and dropped after. Without it they run on embedded PGlite.
 */
export default async function globalSetup(): Promise<void> {
  process.env.GATEHOUSE_TEST_RUN_ID = randomBytes(4).toString('hex');
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    assertTestDatabaseName(serverUrl);
    await withServer(serverUrl, (client) => client.query('SELECT 1'));
    process.env.GATEHOUSE_TEST_SERVER_URL = serverUrl;
  }
}
