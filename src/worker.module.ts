import { DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from './config/app-config';
import { ExtensionConfigModule } from './config/extension-config.module';
import { configsOf, type GatehouseExtension, sharedModulesOf } from './extension';
import { EXTENSIONS } from './extensions';
import { platformModules } from './platform.modules';
import { TasksModule } from './tasks/tasks.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { LlmAgentsModule } from './llm-agents/llm-agents.module';
import { A2aPushModule } from './a2a/push/a2a-push.module';

/**
 * A worker-only process (`npm run start:worker`): the task queue's workers and webhook delivery, on
 * the platform modules, with no controllers, guards, pipes, filters or HTTP server. Booted with
 * `NestFactory.createApplicationContext`. The extensions' shared parts (runners, services, entities) are
 * loaded as in the API, from the same list; their HTTP parts are not (src/extension.ts).
 */
@Module({})
export class WorkerModule {
  static forRoot(config: AppConfig, extensions: readonly GatehouseExtension[] = EXTENSIONS): DynamicModule {
    return {
      module: WorkerModule,
      imports: [
        ...platformModules(config, extensions),
        // The extensions' declared configuration, beside the core's (src/config/extension-config.ts).
        ExtensionConfigModule.forRoot(config, configsOf(extensions)),
        TasksModule,
        // The llm agent type, on every server (CONTRACT, "Model agents"), in both processes.
        LlmAgentsModule,
        WebhooksModule,
        // A2A's push notifications are deliveries of the webhook worker: made where it runs.
        A2aPushModule,
        ...sharedModulesOf(extensions),
      ],
    };
  }
}
