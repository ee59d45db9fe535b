import { createHash, randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
} from 'node:fs';
import { SCRATCH_ROOT } from './scratch-directory';
import { join } from 'node:path';
import type { Client } from 'pg';
import { sparePrefix } from './spare-databases';
import { runDatabasePrefix, withDatabaseName, withServer } from './test-database';

/**
 * Migrating a fresh database is most of the cost of booting a test instance. The migrated template is made
 * once and kept between runs, named by a fingerprint of what it is made of (the migrations, how they run,
 * the TypeORM and PGlite versions): a run whose fingerprint has a template starts from it, and only a
 * change to one of those builds a new one. Every instance starts from a copy (`CREATE DATABASE … TEMPLATE`
 * on PostgreSQL, a copy of the data directory on PGlite); the app still runs its migrations at start and
 * finds nothing to do.
 *
 * A template is built under a name of the run's own and renamed into place only once migrated, so a run
 * never sees a half-built one, and two runs that build the same one at once both finish (the loser's copy
 * is the run's to drop). Templates of other fingerprints unused for a day are removed, with their spares.
 */

const PROJECT_ROOT = join(__dirname, '..', '..');
const MIGRATIONS_DIR = join(PROJECT_ROOT, 'src', 'database', 'migrations');
const TEMPLATE_INPUTS = [
  'src/database/data-source-options.ts',
  'src/database/migrate.ts',
  'src/database/embedded-postgres.ts',
  'node_modules/typeorm/package.json',
  'node_modules/@electric-sql/pglite/package.json',
];
const STALE_AFTER_MS = 24 * 60 * 60 * 1000;
const POSTGRES_TEMPLATE_PREFIX = 'test_gh_template_';
const EMBEDDED_TEMPLATE_PREFIX = 'gatehouse-template-';

/** Hex digest of every input of the migrated template. */
export function templateFingerprint(): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(MIGRATIONS_DIR).sort()) {
    hash.update(file).update(readFileSync(join(MIGRATIONS_DIR, file)));
  }
  for (const file of TEMPLATE_INPUTS) hash.update(file).update(readFileSync(join(PROJECT_ROOT, file)));
  return hash.digest('hex').slice(0, 16);
}

/** The name of the run's migrated template on the PostgreSQL server, built when missing. */
export async function postgresTemplate(serverUrl: string, runId: string): Promise<string> {
  const name = `${POSTGRES_TEMPLATE_PREFIX}${templateFingerprint()}`;
  await withServer(serverUrl, async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await buildPostgresTemplate(client, serverUrl, runId, name);
    // The last use, for the removal of stale templates; a template's comment is its only note.
    await client.query(`COMMENT ON DATABASE "${name}" IS '${Date.now()}'`);
    await dropStalePostgresTemplates(client, name);
  });
  return name;
}

async function buildPostgresTemplate(client: Client, serverUrl: string, runId: string, name: string) {
  // Under the run's prefix: if the rename loses to another run, the run's teardown drops it.
  const building = `${runDatabasePrefix(runId)}template`;
  await client.query(`CREATE DATABASE "${building}"`);
  // Loaded only here: most runs find their template, and TypeORM takes a while to load.
  const { runMigrations } = await import('../../src/database/migrate');
  // Every connection to it is closed when this returns: RENAME and CREATE DATABASE … TEMPLATE refuse one in use.
  await runMigrations(withDatabaseName(serverUrl, building));
  try {
    await client.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
  } catch (error) {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) throw error;
  }
}

async function dropStalePostgresTemplates(client: Client, current: string): Promise<void> {
  const { rows } = await client.query<{ datname: string; used: string | null }>(
    `SELECT datname, shobj_description(oid, 'pg_database') AS used FROM pg_database
      WHERE starts_with(datname, $1) AND datname <> $2`,
    [POSTGRES_TEMPLATE_PREFIX, current],
  );
  for (const { datname, used } of rows) {
    if (Date.now() - Number(used ?? 0) < STALE_AFTER_MS) continue;
    const { rows: spares } = await client.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE starts_with(datname, $1)',
      [sparePrefix(datname)],
    );
    for (const spare of [datname, ...spares.map((row) => row.datname)]) {
      await client.query(`DROP DATABASE IF EXISTS "${spare}" WITH (FORCE)`).catch(() => undefined);
    }
  }
}

/** The migrated PGlite data directory of the run (instances copy its `pglite` folder), built when missing. */
export async function embeddedTemplate(): Promise<string> {
  const fingerprint = templateFingerprint();
  const dataDir = join(SCRATCH_ROOT, `${EMBEDDED_TEMPLATE_PREFIX}${fingerprint}`);
  if (!existsSync(join(dataDir, 'pglite'))) await buildEmbeddedTemplate(dataDir);
  const now = new Date();
  utimesSync(dataDir, now, now);
  removeStaleEmbeddedTemplates(fingerprint);
  return dataDir;
}

async function buildEmbeddedTemplate(dataDir: string): Promise<void> {
  const building = `${dataDir}.building-${randomBytes(4).toString('hex')}`;
  const [{ EmbeddedPostgres }, { runMigrations }] = await Promise.all([
    import('../../src/database/embedded-postgres'),
    import('../../src/database/migrate'),
  ]);
  try {
    const database = await EmbeddedPostgres.start(building, 1);
    try {
      await runMigrations(database.url);
    } finally {
      await database.stop();
    }
    try {
      renameSync(building, dataDir);
    } catch (error) {
      if (!existsSync(join(dataDir, 'pglite'))) throw error;
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
}

function removeStaleEmbeddedTemplates(current: string): void {
  const pattern = new RegExp(`^${EMBEDDED_TEMPLATE_PREFIX}[0-9a-f]{16}$`);
  for (const entry of readdirSync(SCRATCH_ROOT)) {
    if (!pattern.test(entry) || entry.endsWith(current)) continue;
    const path = join(SCRATCH_ROOT, entry);
    if (Date.now() - statSync(path).mtimeMs >= STALE_AFTER_MS) rmSync(path, { recursive: true, force: true });
  }
}

/** Gives a new, empty data directory the migrated embedded database of the run, when there is one. */
export function copyEmbeddedTemplate(dataDir: string): void {
  const template = process.env.GATEHOUSE_TEST_PGLITE_TEMPLATE;
  if (!template || !existsSync(join(template, 'pglite'))) return;
  cpSync(join(template, 'pglite'), join(dataDir, 'pglite'), { recursive: true });
}
