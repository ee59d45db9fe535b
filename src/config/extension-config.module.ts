import { DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from './app-config';
import { type ExtensionConfig, readExtensionConfigs } from './extension-config';

/**
 * The extensions' configuration slices, global as the core's are (AppConfigModule), each under its
 * KEY. Read from the variables this instance was started with when the module is built, so a bad
 * value stops the start with the line naming it (the entry points have refused it earlier, with the
 * core's: main.config.ts).
 */
@Module({})
export class ExtensionConfigModule {
  static forRoot(environment: AppConfig, configs: readonly ExtensionConfig[]): DynamicModule {
    const slices = readExtensionConfigs(configs, environment.extensionVariables);
    const providers = [...slices].map(([config, slice]) => ({ provide: config.KEY, useValue: slice }));
    return {
      module: ExtensionConfigModule,
      global: true,
      providers,
      exports: providers.map(({ provide }) => provide),
    };
  }
}
