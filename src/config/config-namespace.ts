import {
  ConfigFactory,
  ConfigFactoryKeyHost,
  ConfigObject,
  getConfigToken,
  registerAs,
} from '@nestjs/config';
import type { AppConfig } from './app-config';
import type { ExtensionConfig } from './extension-config';

/**
 * A slice of the configuration under one `@nestjs/config` namespace. A provider injects only the
 * slice it needs: `@Inject(tasksConfig.KEY) tasks: ConfigOf<typeof tasksConfig>`.
 *
 * The slice is selected from one validated environment per application instance rather than read
 * from `process.env` inside the factory, so two instances in one process (the e2e suites start
 * several) each see their own values.
 */
export interface ConfigNamespace<T extends ConfigObject> {
  readonly name: string;
  /** The injection token, `CONFIGURATION(<name>)`, as `registerAs` defines it. */
  readonly KEY: string;
  /** The `registerAs` factory that `ConfigModule.forRoot({ load })` registers for one instance. */
  loadFrom(environment: AppConfig): ConfigFactory<T> & ConfigFactoryKeyHost<T>;
}

/** The slice a namespace gives, the core's or an extension's (extension-config.ts). */
export type ConfigOf<N> =
  N extends ConfigNamespace<infer T> ? T : N extends ExtensionConfig<infer T> ? T : never;

export function configNamespace<T extends ConfigObject>(
  name: string,
  select: (environment: AppConfig) => T,
): ConfigNamespace<T> {
  return {
    name,
    KEY: getConfigToken(name),
    loadFrom: (environment) => registerAs(name, () => Object.freeze(select(environment))),
  };
}
