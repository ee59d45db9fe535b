import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { FilesModule } from '../files/files.module';
import { TasksHttpModule } from '../tasks/tasks-http.module';
import { TasksModule } from '../tasks/tasks.module';
import { A2aAgents, A2aTaskServices } from './a2a-agents';
import { A2aController } from './a2a.controller';
import { A2aPushModule } from './push/a2a-push.module';

/**
 * Agents' face of the platform for other agents (CONTRACT, "Agents for other agents: A2A"): every agent
 * at /a2a/{agent_id} over the Agent2Agent protocol, one more face of the tasks module (a message is a
 * task, its events are the stream), behind the same key check as REST. Its push notifications are
 * A2aPushModule's, delivered by the webhook worker.
 */
@Module({
  imports: [AgentsModule, TasksModule, TasksHttpModule, FilesModule, A2aPushModule],
  controllers: [A2aController],
  providers: [A2aAgents, A2aTaskServices],
})
export class A2aModule {}
