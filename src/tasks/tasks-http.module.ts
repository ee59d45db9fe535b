import { Module } from '@nestjs/common';
import { TasksController } from './tasks.controller';
import { TasksModule } from './tasks.module';

/** The tasks API (/v1/tasks) over TasksModule. */
@Module({
  imports: [TasksModule],
  controllers: [TasksController],
})
export class TasksHttpModule {}
