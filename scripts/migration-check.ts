import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { Client } from 'pg';
import { runMigrations } from '../src/database/migrate';
import { migrationsOf } from '../src/extension';
import { EXTENSIONS } from '../src/extensions';

/**
 * `npm run migration:check`: fails when `npm run migration:generate` would write a migration, that is when
 * the entities (`src/**\/*.entity.ts`) and the schema the migrations make disagree. A generated migration
 * is how the README says the schema changes, so a difference is either a migration someone forgot or an
 * entity that does not say what the database holds (a foreign key, index or CHECK the next generated
 * migration would drop). CI runs it (.ci/run).
 *
 * It makes a scratch database on the server of DATABASE_URL (default: the local PostgreSQL), migrates it as
 * the app does at start (the core's migrations and the deployment's extensions'), runs the README's own
 * command there with TypeORM's `--check` (exit 1 and the statements it would write, if any), and drops the
 * database whatever happened. PostgreSQL only: on PGlite the same migrations make the same catalogue, and
 * what TypeORM compares (columns, indexes, foreign keys, checks, by name) does not differ between them.
 */

const ROOT = join(__dirname, '..');
// Written nowhere: with --check the CLI only reports. The name shows in the migration it prints.
const MIGRATION_PATH = 'src/database/migrations/SchemaDifference';

async function main(): Promise<number> {
  const server = new URL(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
  server.pathname = '/postgres';
  const scratch = new URL(server.toString());
  // "test" in the name, as every database a check or test may drop (test/support/test-database.ts).
  const name = `test_migration_check_${process.pid}_${Date.now()}`;
  scratch.pathname = `/${name}`;

  let child: ChildProcess | undefined;
  let interrupted: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    interrupted = signal;
    child?.kill(signal);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  await withServer(server, (client) => client.query(`CREATE DATABASE "${name}"`));
  try {
    await runMigrations(scratch.toString(), migrationsOf(EXTENSIONS));
    if (interrupted) return 1;
    child = spawn('npm', ['run', '--silent', 'migration:generate', '--', '--check', MIGRATION_PATH], {
      cwd: ROOT,
      // The type check is CI's own step (npm run typecheck); without it the CLI starts in a fifth of the
      // time (18 s of CPU with, 4 s without, on the 2-core CI machine).
      env: { ...process.env, DATABASE_URL: scratch.toString(), TS_NODE_TRANSPILE_ONLY: 'true' },
      stdio: 'inherit',
    });
    const running = child;
    const code = await new Promise<number>((resolve, reject) => {
      running.once('error', reject);
      running.once('exit', (exitCode) => resolve(exitCode ?? 1));
    });
    if (code !== 0 && !interrupted) {
      console.error(
        'migration:check: the entities and the migrations disagree. Change the entity to describe what the ' +
          'migrations make, or generate the migration the entity needs (README: "Migrations: change an entity").',
      );
    }
    return interrupted ? 1 : code;
  } finally {
    await withServer(server, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  }
}

async function withServer<T>(url: URL, run: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('migration:check failed:', error);
    process.exit(1);
  },
);
