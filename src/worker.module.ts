import { DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from './config/app-config';
import { platformModules } from './platform.modules';
import { TasksModule } from './tasks/tasks.module';
import { WebhooksModule } from './webhooks/webhooks.module';

/**
 * A worker-only process (`npm run start:worker`): the task queue's workers and webhook delivery, on
 * the platform modules, with no controllers, guards, pipes, filters or HTTP server. Booted with
 * `NestFactory.createApplicationContext`.
 */
@Module({})
export class WorkerModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: WorkerModule,
      imports: [...platformModules(config), TasksModule, WebhooksModule],
    };
  }
}
