import { Injectable } from '@nestjs/common';
import {
  AgentRunContext,
  BuiltInAgent,
  builtInAgentId,
  LocalAgentRunner,
} from '../../../src/agents/agent-runner';

/**
 * The built-in agent of the type: every organization has it, GET /v1/agents lists it. It is priced as a
 * configured agent can be (CONTRACT, "Costs"): a task naming it (`agent_id`) reserves 50 credits unless it
 * names its own `max_credits`, and pays for the usage its run reports.
 */
export const REVERSE_AGENT: BuiltInAgent = {
  id: builtInAgentId('Reverse'),
  name: 'Reverse',
  description: 'Answers with the instruction backwards.',
  pricing: { credits_per_1k_input_tokens: 500, credits_per_1k_output_tokens: 1000 },
  defaultMaxCredits: 50,
};

/**
 * The agent type `reverse`: a task `{agent_type: "reverse", instruction}` succeeds with the instruction
 * backwards. LocalAgentRunner registers it on AgentRunners when its module starts, in the API and in the
 * worker alike (the extension's `module` is loaded by both), and refuses any agent config. It reports on
 * its run through `report`, as a model agent would: progress, its output, and its usage (a token per
 * character, read and written), which the task's pricing turns into credits.
 */
@Injectable()
export class ReverseRunner extends LocalAgentRunner {
  readonly type = 'reverse';
  readonly builtInAgents = [REVERSE_AGENT];

  async run({ task, report }: AgentRunContext): Promise<unknown> {
    await report.progress({ message: 'reversing', percent: 0 });
    // By code point, so a character outside the BMP is not split into two halves.
    const characters = [...task.instruction];
    const output = characters.reverse().join('');
    await report.output(output);
    await report.usage({ input_tokens: characters.length, output_tokens: characters.length });
    return { output };
  }
}
