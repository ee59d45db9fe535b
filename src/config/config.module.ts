import { DynamicModule, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import type { AppConfig } from './app-config';
import { CONFIG_NAMESPACES } from './namespaces';

/**
 * `@nestjs/config` with one namespace per slice (src/config/namespaces.ts), global, loaded from the
 * environment this instance was started with. `ignoreEnvFile` and `ignoreEnvVars` because that
 * environment is read and validated before the application is built (main.config.ts reads `.env`),
 * and so that nothing here writes back into `process.env`.
 */
@Module({})
export class AppConfigModule {
  static forRoot(environment: AppConfig): Promise<DynamicModule> {
    return ConfigModule.forRoot({
      isGlobal: true,
      ignoreEnvFile: true,
      ignoreEnvVars: true,
      load: CONFIG_NAMESPACES.map((namespace) => namespace.loadFrom(environment)),
    });
  }
}
