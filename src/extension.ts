import type { DynamicModule, Type } from '@nestjs/common';
import type { MigrationInterface } from 'typeorm';
import type { ExtensionConfig } from './config/extension-config';

/** A Nest module as `imports` takes it: a class, or what a `forRoot(...)` returns. */
export type ExtensionModule = Type<unknown> | DynamicModule;

/** A TypeORM migration class; its name ends with the 13-digit timestamp TypeORM orders by. */
export type ExtensionMigration = new () => MigrationInterface;

/**
 * A platform team's addition to Gatehouse, registered once in the list both processes read
 * (src/extensions.ts): the API (AppModule) and the worker (WorkerModule) load it from there, so a runner
 * registered for the API is never missing from the worker that runs its tasks.
 *
 * It has parts because the processes differ. The worker has no HTTP server and no key check: it must not
 * load controllers or access policies (nor build what only they need), yet it needs the services, agent
 * runners and entities the API's requests queue work for. And migrations are not a module at all: they
 * run before any module is built (DatabaseModule opens the database with them), so the descriptor names
 * them for DatabaseModule rather than leaving a module to bring them.
 */
export interface GatehouseExtension {
  /** Names the extension in errors; lowercase words joined by `-`. */
  readonly name: string;
  /**
   * Loaded by both processes: services, agent runners (registered on AgentRunners), entities
   * (`TypeOrmModule.forFeature`, picked up by autoLoadEntities). The `<feature>.module.ts` of the feature.
   */
  readonly module?: ExtensionModule;
  /**
   * Loaded by the API only: controllers, and `@AccessPolicy` steps (the key check runs only there).
   * The `<feature>-http.module.ts` of the feature; it imports `module` for the services it calls.
   */
  readonly httpModule?: ExtensionModule;
  /**
   * The migrations of the tables its entities use, run at start by both processes together with the
   * core's (TypeORM orders them all by timestamp and records each by class name, so the name must be
   * unique across Gatehouse and every extension).
   */
  readonly migrations?: readonly ExtensionMigration[];
  /**
   * Its variables with their rules and defaults, and the slice its providers inject
   * (`@Inject(config.KEY) x: ConfigOf<typeof config>`), declared with `extensionConfig(name, ...)`
   * (src/config/extension-config.ts). Both processes validate them at start with the core's, from
   * `.env` and the environment as the core's are read; `.env.example` lists each (a test checks).
   */
  readonly config?: ExtensionConfig;
}

const NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** Checks an extension's descriptor where it is written, so a mistake names the file that made it. */
export function defineExtension(extension: GatehouseExtension): GatehouseExtension {
  if (!NAME.test(extension.name)) {
    throw new Error(`extension name "${extension.name}" must be lowercase words joined by "-"`);
  }
  if (!extension.module && !extension.httpModule && !extension.migrations?.length) {
    throw new Error(`extension "${extension.name}" has neither a module, an httpModule nor migrations`);
  }
  if (extension.config && extension.config.extension !== extension.name) {
    throw new Error(
      `extension "${extension.name}" has the configuration of "${extension.config.extension}": ` +
        `declare it with extensionConfig('${extension.name}', ...)`,
    );
  }
  return Object.freeze({ ...extension });
}

/**
 * The list without repeats (the production list and a test's may both name one), refusing two different
 * extensions of one name: their migrations would otherwise run twice or clash.
 */
export function distinctExtensions(extensions: readonly GatehouseExtension[]): readonly GatehouseExtension[] {
  const byName = new Map<string, GatehouseExtension>();
  for (const extension of extensions) {
    const seen = byName.get(extension.name);
    if (seen && seen !== extension) throw new Error(`two extensions are named "${extension.name}"`);
    byName.set(extension.name, extension);
  }
  return [...byName.values()];
}

/** What both processes load of the extensions. */
export function sharedModulesOf(extensions: readonly GatehouseExtension[]): ExtensionModule[] {
  return distinctExtensions(extensions).flatMap(({ module }) => (module ? [module] : []));
}

/** What only the API loads of the extensions. */
export function httpModulesOf(extensions: readonly GatehouseExtension[]): ExtensionModule[] {
  return distinctExtensions(extensions).flatMap(({ httpModule }) => (httpModule ? [httpModule] : []));
}

/** The extensions' migrations, for DatabaseModule (and the migration CLI, ormconfig.ts). */
export function migrationsOf(extensions: readonly GatehouseExtension[]): ExtensionMigration[] {
  return distinctExtensions(extensions).flatMap(({ migrations }) => migrations ?? []);
}

/** The extensions' declared configuration, for the entry points' validation and ExtensionConfigModule. */
export function configsOf(extensions: readonly GatehouseExtension[]): ExtensionConfig[] {
  return distinctExtensions(extensions).flatMap(({ config }) => (config ? [config] : []));
}
