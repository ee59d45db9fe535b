import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '../agents/agents.module';
import { AgentRunContexts } from './agent-run-contexts';
import { FilesModule } from '../files/files.module';
import { TaskQueueRepository } from './task-queue.repository';
import { TaskChanges } from './task-changes';
import { TaskEventFeeds } from './task-event-feed';
import { TaskWakeups } from './task-wakeups';
import { TaskWorker } from './task-worker';
import { Task } from './task.entity';
import { TasksService } from './tasks.service';
import { TaskTokensModule } from './run-tokens/task-tokens.module';
import { UsageModule } from '../usage/usage.module';
import { ReservationSettlementModule } from '../api-keys/credits/reservation-settlement';

/** Tasks and the durable PostgreSQL queue that runs them. */
@Module({
  imports: [
    TypeOrmModule.forFeature([Task]),
    AgentsModule,
    FilesModule,
    TaskTokensModule,
    ReservationSettlementModule,
    UsageModule,
  ],
  providers: [
    TaskQueueRepository,
    TasksService,
    TaskWorker,
    AgentRunContexts,
    TaskWakeups,
    TaskChanges,
    TaskEventFeeds,
  ],
  exports: [TasksService, TaskWorker, TaskQueueRepository],
})
export class TasksModule {}
