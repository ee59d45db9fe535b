import { randomBytes } from 'node:crypto';
import { SpareDatabases } from './spare-databases';
import { embeddedTemplate, postgresTemplate } from './template-database';
import { assertTestDatabaseName, withServer } from './test-database';

/**
 * With DATABASE_URL set, e2e suites run against that PostgreSQL server: each app instance gets a fresh
 * database cloned from the migrated template (kept between runs: template-database.ts) and dropped after.
 * Without it they run on embedded PGlite, each instance on a copy of a migrated data directory.
 */
export default async function globalSetup(): Promise<void> {
  // Jest calls the global setup once per project (e2e, medium): the run prepares its databases once.
  if (process.env.GATEHOUSE_TEST_RUN_ID) return;
  const runId = randomBytes(4).toString('hex');
  process.env.GATEHOUSE_TEST_RUN_ID = runId;
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    assertTestDatabaseName(serverUrl);
    await withServer(serverUrl, (client) => client.query('SELECT 1'));
    process.env.GATEHOUSE_TEST_SERVER_URL = serverUrl;
    const template = await postgresTemplate(serverUrl, runId);
    process.env.GATEHOUSE_TEST_TEMPLATE_DB = template;
    // The global setup and teardown share this process's globals (and only they do).
    (globalThis as GlobalWithSpares).gatehouseSpareDatabases = SpareDatabases.start(
      serverUrl,
      runId,
      template,
    );
  } else {
    process.env.GATEHOUSE_TEST_PGLITE_TEMPLATE = await embeddedTemplate();
  }
}

export type GlobalWithSpares = typeof globalThis & { gatehouseSpareDatabases?: SpareDatabases };
