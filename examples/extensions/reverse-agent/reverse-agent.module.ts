import { Module } from '@nestjs/common';
import { AgentsModule } from '../../../src/agents/agents.module';
import { ReverseRunner } from './reverse.runner';

/** The runner, beside AgentsModule's registry (the same instance the task worker reads). */
@Module({
  imports: [AgentsModule],
  providers: [ReverseRunner],
})
export class ReverseAgentModule {}
