import { Module, OnModuleInit, type Type } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '../agents/agents.module';
import { AgentRunContexts } from './agent-run-contexts';
import { FilesModule } from '../files/files.module';
import { TaskQueueRepository } from './task-queue.repository';
import { TaskEventAppends } from './task-event-appends';
import { TaskChanges } from './task-changes';
import { TaskEventFeeds } from './task-event-feed';
import { TaskWakeups } from './task-wakeups';
import { TaskWorker } from './task-worker';
import { Task } from './task.entity';
import { TasksService } from './tasks.service';
import { TaskEnds } from './task-ends';
import { TaskEvents } from './task-events';
import { TaskTokensModule } from './run-tokens/task-tokens.module';
import { UsageModule } from '../usage/usage.module';
import { ReservationSettlementModule } from '../api-keys/credits/reservation-settlement';
import { TaskEndedData, TaskEventData, TaskFailedData } from '../events/event-payloads.dto';
import { WebhookEventTypes } from '../webhooks/webhook-event-types';
import { WebhooksModule } from '../webhooks/webhooks.module';

/** The webhook event types TasksModule emits (a run that ended), with the class of each one's `data`. */
export const TASK_WEBHOOK_EVENTS = {
  'task.succeeded': TaskEndedData,
  'task.failed': TaskFailedData,
  'task.cancelled': TaskEventData,
} as const satisfies Record<string, Type<unknown>>;

/** Tasks and the durable PostgreSQL queue that runs them. */
@Module({
  imports: [
    TypeOrmModule.forFeature([Task]),
    AgentsModule,
    FilesModule,
    TaskTokensModule,
    ReservationSettlementModule,
    UsageModule,
    WebhooksModule,
  ],
  providers: [
    TaskQueueRepository,
    TaskEventAppends,
    TasksService,
    TaskEvents,
    TaskEnds,
    TaskWorker,
    AgentRunContexts,
    TaskWakeups,
    TaskChanges,
    TaskEventFeeds,
  ],
  exports: [TasksService, TaskEvents, TaskEnds, TaskWorker, TaskQueueRepository],
})
export class TasksModule implements OnModuleInit {
  constructor(private readonly eventTypes: WebhookEventTypes) {}

  /** The webhook event types it emits (above), in the API and the worker alike. */
  onModuleInit(): void {
    this.eventTypes.declare(TASK_WEBHOOK_EVENTS);
  }
}
