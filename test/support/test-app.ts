import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { AppModule } from '../../src/app.module';
import { WorkerModule } from '../../src/worker.module';
import { APP_OPTIONS, configureApp } from '../../src/app.setup';
import type { AppConfig } from '../../src/config/app-config';
import { configsOf, type GatehouseExtension } from '../../src/extension';
import { EXTENSIONS } from '../../src/extensions';
import {
  compileWithClock,
  prepareInstance,
  ServiceContext,
  startModuleContext,
  TestAppOptions,
} from './test-instance';
import { StableShapeExpressAdapter } from '../../src/http/stable-shape.adapter';

export { createTestDatabase, dropTestDatabase, instanceDatabaseEnv, runRedisEnv } from './test-instance';
export type { ServiceContext, TestAppOptions } from './test-instance';

export interface ExtensionOptions {
  /** Extensions loaded beside the deployment's list (src/extensions.ts), as if one line were added to it. */
  extensions?: readonly GatehouseExtension[];
  /**
   * The core alone: the deployment's list is not loaded, only `extensions`. For a test about an instance
   * that lacks an extension, or a reviewed record of the core's own declarations (the route snapshot).
   */
  core?: boolean;
}

/**
 * The deployment's list (src/extensions.ts), less any extension the test brings its own copy of (by
 * name): an example's own spec loads the example while CI runs the suite with the examples in the list
 * (scripts/deploy-example-extensions.sh), and two copies of one extension would declare everything twice.
 * Core tests assert the core's own vocabulary (its agents, permissions, policies), never that nothing
 * else exists, so an extension in the list breaks none of them.
 */
function productionList(own: readonly GatehouseExtension[] = []): readonly GatehouseExtension[] {
  return EXTENSIONS.filter((listed) => !own.some((extension) => extension.name === listed.name));
}

/**
 * What the production list's extensions read, as this run's environment sets it (a deployment's `.env`
 * or environment), beneath the test's own `env`: an instance reads nothing else of `process.env`.
 */
function withDeploymentVariables<T extends TestAppOptions & ExtensionOptions>(options: T): T {
  const given: Record<string, string> = {};
  for (const { variables } of configsOf(options.core ? [] : productionList(options.extensions)))
    for (const name of variables) if (process.env[name] !== undefined) given[name] = process.env[name];
  return Object.keys(given).length ? { ...options, env: { ...given, ...options.env } } : options;
}

/** The deployment's extensions and the test's own. */
const extensionsOf = (options: ExtensionOptions) => [
  ...(options.core ? [] : productionList(options.extensions)),
  ...(options.extensions ?? []),
];

export interface TestApp {
  app: INestApplication;
  http: TestAgent;
  config: AppConfig;
  /** The PostgreSQL database this instance uses (undefined on PGlite). */
  databaseUrl?: string;
  dataDir: string;
  close(options?: { keepData?: boolean }): Promise<void>;
}

/**
 * Boots the real AppModule, configured exactly as main.ts configures it, on its own fresh database
 * (PostgreSQL when the run has one, PGlite otherwise).
 */
export async function startTestApp(options: TestAppOptions & ExtensionOptions = {}): Promise<TestApp> {
  const { config, databaseUrl, dataDir, cleanUp } = await prepareInstance(withDeploymentVariables(options));
  const moduleRef = await compileWithClock(
    Test.createTestingModule({
      imports: [AppModule.forRoot(config, extensionsOf(options)), ...(options.imports ?? [])],
    }),
    options.clock,
  );
  const app = moduleRef.createNestApplication(new StableShapeExpressAdapter(), APP_OPTIONS);
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

/**
 * Service-level tests (test/medium): the real modules on a real, fresh database, without HTTP.
 * Services are called directly, as immich's medium tests do. The whole app; a spec that needs one
 * feature module boots only that (startFeatureContext, feature-context.ts).
 */
export function startServiceContext(
  options: TestAppOptions & ExtensionOptions & { root?: 'app' | 'worker' } = {},
): Promise<ServiceContext> {
  // `worker`: the worker process's module, as src/worker.ts boots it, without the HTTP side.
  return startModuleContext(withDeploymentVariables(options), (config) => [
    options.root === 'worker'
      ? WorkerModule.forRoot(config, extensionsOf(options))
      : AppModule.forRoot(config, extensionsOf(options)),
  ]);
}
