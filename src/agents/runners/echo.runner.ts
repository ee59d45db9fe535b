import { Injectable, OnModuleInit } from '@nestjs/common';
import { AgentRunContext, AgentRunner, AgentRunners } from '../agent-runner';
import { AgentError, AgentErrorCode } from '../agents.errors';

/** The built-in agent: answers with the instruction and a summary of the attachments. */
@Injectable()
export class EchoRunner implements AgentRunner, OnModuleInit {
  readonly type = 'echo';
  readonly needsAgent = false;
  // It answers from the task alone: no key needs to be kept with its tasks.
  readonly forwardsCredentials = false;

  constructor(private readonly runners: AgentRunners) {}

  onModuleInit(): void {
    this.runners.register(this);
  }

  async validateConfig(config: Record<string, unknown>): Promise<void> {
    if (Object.keys(config).length) {
      throw new AgentError(AgentErrorCode.InvalidConfig, 'The echo agent takes no config.', {
        errors: [{ field: 'config', message: 'the echo agent takes no config' }],
      });
    }
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
