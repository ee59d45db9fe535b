import { randomBytes } from 'node:crypto';
import { MIGRATIONS } from '../src/database/migrations';
import { runMigrations } from '../src/database/migrate';
import { runDatabasePrefix, withDatabaseName, withServer } from './support/test-database';

/**
 * Instances started together on a database no instance has migrated yet (a deployment's first start, a
 * rolling upgrade that brings a migration) all run runMigrations at once. Under MIGRATIONS_LOCK the first
 * runs each migration and the others wait, then find nothing left: every start succeeds, and each
 * migration is recorded once. Without the lock, two of them ran the first migration's CREATE TABLEs
 * side by side and one start failed.
 */
const serverUrl = process.env.GATEHOUSE_TEST_SERVER_URL;
const runId = process.env.GATEHOUSE_TEST_RUN_ID;
// The embedded database is one process's own: nothing else can migrate it at the same time.
const onServer = serverUrl && runId ? describe : describe.skip;

onServer('migrations started by several instances at once', () => {
  const name = `${runDatabasePrefix(runId ?? '')}migrations_${randomBytes(4).toString('hex')}`;
  const url = withDatabaseName(serverUrl ?? 'postgresql://unused/', name);

  beforeAll(() => withServer(serverUrl!, (client) => client.query(`CREATE DATABASE "${name}"`)));
  afterAll(() =>
    withServer(serverUrl!, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)),
  );

  it('all succeed, and each migration runs once', async () => {
    const starts = await Promise.allSettled([runMigrations(url), runMigrations(url), runMigrations(url)]);
    expect(starts.map((start) => start.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    const recorded = await withServer(url, async (client) => {
      const { rows } = await client.query<{ name: string; times: number }>(
        'SELECT name, count(*)::int AS times FROM migrations GROUP BY name ORDER BY name',
      );
      return rows;
    });
    expect(recorded).toEqual(
      MIGRATIONS.map((migration) => ({ name: migration.name, times: 1 })).sort((a, b) =>
        a.name < b.name ? -1 : 1,
      ),
    );
  });
});
