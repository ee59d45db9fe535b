import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { Test, TestingModule, TestingModuleBuilder } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { AppModule } from '../../src/app.module';
import { WorkerModule } from '../../src/worker.module';
import { APP_OPTIONS, configureApp } from '../../src/app.setup';
import { Clock } from '../../src/common/clock';
import { AppConfig, loadAppConfig } from '../../src/config/app-config';
import { copyEmbeddedTemplate } from './template-database';
import { assertTestDatabaseName, runDatabasePrefix, withDatabaseName, withServer } from './test-database';

export interface TestAppOptions {
  /** Extra or overriding environment variables. */
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

export interface TestApp {
  app: INestApplication;
  http: TestAgent;
  config: AppConfig;
  /** The PostgreSQL database this instance uses (undefined on PGlite). */
  databaseUrl?: string;
  dataDir: string;
  close(options?: { keepData?: boolean }): Promise<void>;
}

let databaseCounter = 0;

/** Creates a fresh database for one app instance on the run's PostgreSQL server, migrated (from the template). */
export async function createTestDatabase(): Promise<string | undefined> {
  const serverUrl = process.env.GATEHOUSE_TEST_SERVER_URL;
  const runId = process.env.GATEHOUSE_TEST_RUN_ID;
  if (!serverUrl || !runId) return undefined;
  // The counter restarts with every test file (jest gives each its own module registry) and the pid is
  // the same under --runInBand: the random part keeps a database a suite kept on purpose from clashing.
  const name = `${runDatabasePrefix(runId)}${process.pid}_${++databaseCounter}_${randomBytes(3).toString('hex')}`;
  const template = process.env.GATEHOUSE_TEST_TEMPLATE_DB;
  const from = template ? ` TEMPLATE "${template}"` : '';
  await withServer(serverUrl, (client) => client.query(`CREATE DATABASE "${name}"${from}`));
  const url = withDatabaseName(serverUrl, name);
  assertTestDatabaseName(url);
  return url;
}

export async function dropTestDatabase(url: string): Promise<void> {
  const serverUrl = process.env.GATEHOUSE_TEST_SERVER_URL!;
  const name = assertTestDatabaseName(url);
  await withServer(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

/** The configuration of one test instance: its own database and data directory, quiet, fast hashing. */
async function prepareInstance(options: TestAppOptions) {
  const ownsDataDir = !options.dataDir;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'gatehouse-test-'));
  const ownsDatabase = !options.databaseUrl && !options.embedded;
  const databaseUrl = options.embedded ? undefined : (options.databaseUrl ?? (await createTestDatabase()));
  if (ownsDataDir && !databaseUrl) copyEmbeddedTemplate(dataDir);

  const config = loadAppConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    BCRYPT_ROUNDS: '4',
    ALLOW_SIGNUP: 'true',
    // Suites that exercise tasks turn workers on; the others need no polling in the background.
    WORKER_CONCURRENCY: '0',
    WEBHOOK_WORKERS: '0',
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    REDIS_URL: process.env.REDIS_URL,
    ...options.env,
  });
  const cleanUp = async (keepData: boolean): Promise<void> => {
    if (keepData) return;
    if (ownsDatabase && databaseUrl) await dropTestDatabase(databaseUrl);
    if (ownsDataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  return { config, databaseUrl, dataDir, cleanUp };
}

function compileWithClock(builder: TestingModuleBuilder, clock?: Clock): Promise<TestingModule> {
  if (clock) builder.overrideProvider(Clock).useValue(clock);
  return builder.compile();
}

/**
 * Boots the real AppModule, configured exactly as main.ts configures it, on its own fresh database
 * (PostgreSQL when the run has one, PGlite otherwise).
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const { config, databaseUrl, dataDir, cleanUp } = await prepareInstance(options);
  const moduleRef = await compileWithClock(
    Test.createTestingModule({ imports: [AppModule.forRoot(config), ...(options.imports ?? [])] }),
    options.clock,
  );
  const app = moduleRef.createNestApplication(APP_OPTIONS);
  configureApp(app);
  await app.init();

  return {
    app,
    http: request(app.getHttpServer()),
    config,
    databaseUrl,
    dataDir,
    async close({ keepData = false } = {}) {
      await app.close();
      await cleanUp(keepData);
    },
  };
}

export interface ServiceContext {
  /** Resolve any provider: `context.get(ApiKeysService)`. */
  get: TestingModule['get'];
  config: AppConfig;
  databaseUrl?: string;
  close(): Promise<void>;
}

/**
 * Service-level tests (test/medium): the real modules on a real, fresh database, without HTTP.
 * Services are called directly, as immich's medium tests do.
 */
export async function startServiceContext(
  options: TestAppOptions & { root?: 'app' | 'worker' } = {},
): Promise<ServiceContext> {
  const { config, databaseUrl, cleanUp } = await prepareInstance(options);
  // `worker`: the worker process's module, as src/worker.ts boots it, without the HTTP side.
  const root = options.root === 'worker' ? WorkerModule.forRoot(config) : AppModule.forRoot(config);
  const moduleRef = await compileWithClock(Test.createTestingModule({ imports: [root] }), options.clock);
  await moduleRef.init();
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
