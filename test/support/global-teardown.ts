import type { GlobalWithSpares } from './global-setup';
import { removeRunArtifacts } from './run-artifacts';
import { runDatabasePrefix, withServer } from './test-database';

/**
 * Removes the run's compiled app and OpenAPI metadata, and drops any database of this run an interrupted
 * suite left behind. The migrated template, spares and retired databases are the next run's.
 */
export default async function globalTeardown(): Promise<void> {
  await (globalThis as GlobalWithSpares).gatehouseSpareDatabases?.stop();
  removeRunArtifacts();
  const serverUrl = process.env.GATEHOUSE_TEST_SERVER_URL;
  const runId = process.env.GATEHOUSE_TEST_RUN_ID;
  if (!serverUrl || !runId) return;
  await withServer(serverUrl, async (client) => {
    const { rows } = await client.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`,
      [runDatabasePrefix(runId)],
    );
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  });
}
