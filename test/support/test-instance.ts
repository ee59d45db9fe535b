import type { ModuleMetadata } from '@nestjs/common';
import { Test, TestingModule, TestingModuleBuilder } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { QUIET_INSTANCE_ENV } from './quiet-instance';
import { SCRATCH_ROOT } from './scratch-directory';
import { basename, join } from 'node:path';
import { Clock } from '../../src/common/clock';
import { AppConfig, loadAppConfig } from '../../src/config/app-config';
import { claimSpareDatabase, retireDatabase } from './spare-databases';
import { copyEmbeddedTemplate } from './template-database';
import { assertTestDatabaseName, runDatabasePrefix, withDatabaseName, withServer } from './test-database';

/**
 * One test instance's configuration and database, and a context of modules on it. Apart from
 * test-app.ts so that a context of a few modules (feature-context.ts) does not load the whole app.
 */

export interface TestAppOptions {
  /**
   * Extra or overriding environment variables: the core's and the extensions' alike (an extension's
   * configuration is read from what the core does not claim, AppConfig.extensionVariables).
   */
  env?: Record<string, string | undefined>;
  /** Force embedded PGlite even when the run has a PostgreSQL server. */
  embedded?: boolean;
  /** Reuse a database (PostgreSQL URL) or data directory instead of a fresh one; the caller owns it. */
  databaseUrl?: string;
  dataDir?: string;
  /** Extra modules booted beside AppModule, as a platform team's own modules would be. */
  imports?: ModuleMetadata['imports'];
  /** Replaces the app's Clock, e.g. with a ManualClock (test/support/manual-clock.ts). */
  clock?: Clock;
}

let databaseCounter = 0;

/**
 * A fresh database for one app instance on the run's PostgreSQL server, migrated: a ready copy of the
 * template when the run has one (spare-databases.ts), else one created from it now.
 */
export async function createTestDatabase(): Promise<string | undefined> {
  const serverUrl = process.env.GATEHOUSE_TEST_SERVER_URL;
  const runId = process.env.GATEHOUSE_TEST_RUN_ID;
  if (!serverUrl || !runId) return undefined;
  // The counter restarts with every test file (jest gives each its own module registry) and the pid is
  // the same under --runInBand: the random part keeps a database a suite kept on purpose from clashing.
  const name = `${runDatabasePrefix(runId)}${process.pid}_${++databaseCounter}_${randomBytes(3).toString('hex')}`;
  const template = process.env.GATEHOUSE_TEST_TEMPLATE_DB;
  if (!template || !(await claimSpareDatabase(serverUrl, template, name))) {
    const from = template ? ` TEMPLATE "${template}"` : '';
    await withServer(serverUrl, (client) => client.query(`CREATE DATABASE "${name}"${from}`));
  }
  const url = withDatabaseName(serverUrl, name);
  assertTestDatabaseName(url);
  return url;
}

/** Drops an instance's database: later, in a run's main process, when the run keeps spares. */
export async function dropTestDatabase(url: string): Promise<void> {
  const serverUrl = process.env.GATEHOUSE_TEST_SERVER_URL!;
  const name = assertTestDatabaseName(url);
  if (process.env.GATEHOUSE_TEST_TEMPLATE_DB) return retireDatabase(serverUrl, name);
  await withServer(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

/** The configuration of one test instance: its own database and data directory, quiet, fast hashing. */
export async function prepareInstance(options: TestAppOptions) {
  const ownsDataDir = !options.dataDir;
  const dataDir = options.dataDir ?? mkdtempSync(join(SCRATCH_ROOT, 'gatehouse-test-'));
  const ownsDatabase = !options.databaseUrl && !options.embedded;
  const databaseUrl = options.embedded ? undefined : (options.databaseUrl ?? (await createTestDatabase()));
  if (ownsDataDir && !databaseUrl) copyEmbeddedTemplate(dataDir);

  const config = loadAppConfig({
    ...QUIET_INSTANCE_ENV,
    DATA_DIR: dataDir,
    ...(options.env?.DATABASE_POOLER ? { DATABASE_URL: databaseUrl } : instanceDatabaseEnv(databaseUrl)),
    // One Redis or a cluster, as the run's environment says; a test that names either gets only that one.
    ...(options.env && ('REDIS_URL' in options.env || 'REDIS_CLUSTER_NODES' in options.env)
      ? {}
      : runRedisEnv()),
    // Test files run in parallel on one Redis: instances of one database share counters and
    // invalidations, as one deployment's instances do, and nothing with another file's.
    REDIS_KEY_PREFIX: `${databaseUrl ? new URL(databaseUrl).pathname.slice(1) : basename(dataDir)}:`,
    ...options.env,
  });
  const cleanUp = async (keepData: boolean): Promise<void> => {
    if (keepData) return;
    if (ownsDatabase && databaseUrl) await dropTestDatabase(databaseUrl);
    if (ownsDataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  return { config, databaseUrl, dataDir, cleanUp };
}

/**
 * The database variables of an instance on `databaseUrl`, in this process or a child process (the API
 * and worker entry points the process suites spawn): DATABASE_URL alone, or with
 * GATEHOUSE_TEST_POOLER_URL (a run through PgBouncer in transaction mode, .ci/run) an instance whose
 * database is on the run's server reaches it through the pooler, its sessions (LISTEN, migrations)
 * directly, as DATABASE_POOLER=transaction does in production; an instance on a server of its own (the
 * fault suites') is left alone.
 */
export function instanceDatabaseEnv(databaseUrl: string | undefined): Record<string, string | undefined> {
  const pooler = process.env.GATEHOUSE_TEST_POOLER_URL;
  const server = process.env.GATEHOUSE_TEST_SERVER_URL;
  if (!pooler || !server || !databaseUrl || new URL(databaseUrl).host !== new URL(server).host)
    return { DATABASE_URL: databaseUrl };
  const viaPooler = new URL(pooler);
  viaPooler.pathname = new URL(databaseUrl).pathname;
  return {
    DATABASE_URL: viaPooler.toString(),
    DATABASE_DIRECT_URL: databaseUrl,
    DATABASE_POOLER: 'transaction',
  };
}

/**
 * The run's Redis, for an instance here or in a child process: one Redis (REDIS_URL) or a cluster
 * (REDIS_CLUSTER_NODES, .ci/run's cluster pass), whichever the run has; neither when it has none.
 */
export function runRedisEnv(): Record<string, string> {
  const { REDIS_URL, REDIS_CLUSTER_NODES } = process.env;
  return {
    ...(REDIS_URL ? { REDIS_URL } : {}),
    ...(REDIS_CLUSTER_NODES ? { REDIS_CLUSTER_NODES } : {}),
  };
}

export function compileWithClock(builder: TestingModuleBuilder, clock?: Clock): Promise<TestingModule> {
  if (clock) builder.overrideProvider(Clock).useValue(clock);
  return builder.compile();
}

export interface ServiceContext {
  /** Resolve any provider: `context.get(ApiKeyQueryService)`. */
  get: TestingModule['get'];
  config: AppConfig;
  databaseUrl?: string;
  close(): Promise<void>;
}

/**
 * The modules `importsOf(config)` names, initialised without HTTP on a fresh instance (prepareInstance):
 * what startServiceContext (the whole app) and startFeatureContext (a few modules) share.
 */
export async function startModuleContext(
  options: TestAppOptions,
  importsOf: (config: AppConfig) => ModuleMetadata['imports'],
): Promise<ServiceContext> {
  const { config, databaseUrl, cleanUp } = await prepareInstance(options);
  let moduleRef: TestingModule;
  try {
    moduleRef = await compileWithClock(
      Test.createTestingModule({ imports: importsOf(config) }),
      options.clock,
    );
    await moduleRef.init();
  } catch (error) {
    // No context to close: its database and directory would be left behind.
    await cleanUp(false);
    throw error;
  }
  return {
    get: moduleRef.get.bind(moduleRef) as TestingModule['get'],
    config,
    databaseUrl,
    async close() {
      await moduleRef.close();
      await cleanUp(false);
    },
  };
}
