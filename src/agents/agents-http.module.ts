import { Module } from '@nestjs/common';
import { AgentsController } from './agents.controller';
import { AgentsModule } from './agents.module';

/** The agents API (/v1/agents) over AgentsModule. */
@Module({
  imports: [AgentsModule],
  controllers: [AgentsController],
})
export class AgentsHttpModule {}
