import { Injectable } from '@nestjs/common';
import { AgentRunContext, BuiltInAgent, builtInAgentId, LocalAgentRunner } from '../agent-runner';

/** The agent every organization has (the contract's `echo`), with the id it has always had. */
export const ECHO_BUILT_IN: BuiltInAgent = {
  id: builtInAgentId('Echo'),
  name: 'Echo',
  description: 'Answers with the instruction and a summary of the attachments.',
};

/** The built-in agent: answers with the instruction and a summary of the attachments. */
@Injectable()
export class EchoRunner extends LocalAgentRunner {
  readonly type = 'echo';
  readonly builtInAgents = [ECHO_BUILT_IN];

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
