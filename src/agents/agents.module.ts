import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Agent } from './agent.entity';
import { AgentRunners } from './agent-runner';
import { AgentsRepository } from './agents.repository';
import { AgentsService } from './agents.service';
import { EchoRunner } from './runners/echo.runner';
import { HttpRunner } from './runners/http.runner';

/** Agent definitions and the runner registry (echo and http built in). */
@Module({
  imports: [TypeOrmModule.forFeature([Agent])],
  providers: [AgentsRepository, AgentsService, AgentRunners, EchoRunner, HttpRunner],
  exports: [AgentsService, AgentRunners],
})
export class AgentsModule {}
