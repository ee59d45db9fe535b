import { Injectable } from '@nestjs/common';
import {
  AgentRunContext,
  BuiltInAgent,
  builtInAgentId,
  LocalAgentRunner,
} from '../../../src/agents/agent-runner';

/** The built-in agent of the type: every organization has it, GET /v1/agents lists it. */
export const REVERSE_AGENT: BuiltInAgent = {
  id: builtInAgentId('Reverse'),
  name: 'Reverse',
  description: 'Answers with the instruction backwards.',
};

/**
 * The agent type `reverse`: a task `{agent_type: "reverse", instruction}` succeeds with the instruction
 * backwards. LocalAgentRunner registers it on AgentRunners when its module starts, in the API and in the
 * worker alike (the extension's `module` is loaded by both), and refuses any agent config.
 */
@Injectable()
export class ReverseRunner extends LocalAgentRunner {
  readonly type = 'reverse';
  readonly builtInAgents = [REVERSE_AGENT];

  async run({ task }: AgentRunContext): Promise<unknown> {
    // By code point, so a character outside the BMP is not split into two halves.
    return { output: [...task.instruction].reverse().join('') };
  }
}
