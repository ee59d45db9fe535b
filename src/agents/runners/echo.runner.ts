import { Injectable, OnModuleInit } from '@nestjs/common';
import {
  AgentRunContext,
  AgentRunner,
  AgentRunners,
  BuiltInAgent,
  builtInAgentId,
  refuseAnyConfig,
} from '../agent-runner';

/** The agent every organization has (the contract's `echo`), with the id it has always had. */
export const ECHO_BUILT_IN: BuiltInAgent = {
  id: builtInAgentId('Echo'),
  name: 'Echo',
  description: 'Answers with the instruction and a summary of the attachments.',
};

/** The built-in agent: answers with the instruction and a summary of the attachments. */
@Injectable()
export class EchoRunner implements AgentRunner, OnModuleInit {
  readonly type = 'echo';
  readonly needsAgent = false;
  // It answers from the task alone: no key needs to be kept with its tasks.
  readonly forwardsCredentials = false;
  readonly builtInAgents = [ECHO_BUILT_IN];

  constructor(private readonly runners: AgentRunners) {}

  onModuleInit(): void {
    this.runners.register(this);
  }

  async validateConfig(config: Record<string, unknown>): Promise<void> {
    refuseAnyConfig(this.type, config);
  }

  async run({ task }: AgentRunContext): Promise<unknown> {
    return {
      output: task.instruction,
      attachments: task.attachments.map((file) => ({
        id: file.id,
        filename: file.filename,
        size: file.size,
        sha256: file.sha256,
      })),
    };
  }
}
