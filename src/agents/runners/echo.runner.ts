import { Injectable, OnModuleInit } from '@nestjs/common';
import { badRequest } from '../../common/problem';
import { AgentRunContext, AgentRunner, AgentRunners } from '../agent-runner';

/** The built-in agent: answers with the instruction and a summary of the attachments. */
@Injectable()
export class EchoRunner implements AgentRunner, OnModuleInit {
  readonly type = 'echo';
  readonly needsAgent = false;

  constructor(private readonly runners: AgentRunners) {}

  onModuleInit(): void {
    this.runners.register(this);
  }

  async validateConfig(config: Record<string, unknown>): Promise<void> {
    if (Object.keys(config).length) throw badRequest('invalid_config', 'The echo agent takes no config.');
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
