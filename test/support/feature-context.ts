import type { ModuleMetadata } from '@nestjs/common';
import { platformModules } from '../../src/platform.modules';
import { ServiceContext, startModuleContext, TestAppOptions } from './test-instance';

export type { ServiceContext } from './test-instance';

export interface FeatureContextOptions extends Omit<TestAppOptions, 'imports'> {
  /** The feature modules under test: `[AgentsModule]`; they bring the feature modules they import. */
  imports: NonNullable<ModuleMetadata['imports']>;
}

/**
 * A medium spec's context of one feature module (or a few) rather than the whole app, in the spirit of
 * immich's `newMediumService`: the platform every process starts from (platformModules: configuration,
 * secrets, clock, logs, database, Redis, scheduling, cache invalidation, audit, events, outbound HTTP)
 * and the named modules, without HTTP, on a fresh database cloned from the run's migrated template.
 * Without the rest of the app (other modules, the key check, the dashboard) a spec loads and boots
 * about a second sooner. What the named modules need and do not import fails the boot, naming the
 * missing provider. The permission catalogue holds what the loaded modules declare: a spec naming
 * another module's permissions (a custom role granting agents:read) imports that module too.
 */
export function startFeatureContext(options: FeatureContextOptions): Promise<ServiceContext> {
  return startModuleContext(options, (config) => [...platformModules(config), ...options.imports]);
}
