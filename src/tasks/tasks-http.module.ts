import { Module } from '@nestjs/common';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { TaskCredits, TaskCreditSettlements } from './task-credits';
import { TasksController } from './tasks.controller';
import { TasksModule } from './tasks.module';
import { UsageModule } from '../usage/usage.module';

/** The tasks API (/v1/tasks) over TasksModule, with the credits a task reserves (TaskCredits). */
@Module({
  imports: [TasksModule, ApiKeysModule, UsageModule],
  controllers: [TasksController],
  providers: [TaskCredits, TaskCreditSettlements],
  // Other faces that create tasks (MCP's run tools) reserve their credits the same way.
  exports: [TaskCredits],
})
export class TasksHttpModule {}
