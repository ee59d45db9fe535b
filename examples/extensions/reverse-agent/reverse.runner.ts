import { Injectable, OnModuleInit } from '@nestjs/common';
import {
  AgentRunContext,
  AgentRunner,
  AgentRunners,
  BuiltInAgent,
  builtInAgentId,
  refuseAnyConfig,
} from '../../../src/agents/agent-runner';

/** The built-in agent of the type: every organization has it, GET /v1/agents lists it. */
export const REVERSE_AGENT: BuiltInAgent = {
  id: builtInAgentId('Reverse'),
  name: 'Reverse',
  description: 'Answers with the instruction backwards.',
};

/**
 * The agent type `reverse`: a task `{agent_type: "reverse", instruction}` succeeds with the instruction
 * backwards. It registers itself on AgentRunners when its module starts, in the API and in the worker
 * alike (the extension's `module` is loaded by both).
 */
@Injectable()
export class ReverseRunner implements AgentRunner, OnModuleInit {
  readonly type = 'reverse';
  // Tasks name the type; an organization may still define agents of it (POST /v1/agents).
  readonly needsAgent = false;
  // It answers from the task alone: the caller's key is not kept with its tasks.
  readonly forwardsCredentials = false;
  readonly builtInAgents = [REVERSE_AGENT];

  constructor(private readonly runners: AgentRunners) {}

  onModuleInit(): void {
    this.runners.register(this);
  }

  async validateConfig(config: Record<string, unknown>): Promise<void> {
    refuseAnyConfig(this.type, config);
  }

  async run({ task }: AgentRunContext): Promise<unknown> {
    // By code point, so a character outside the BMP is not split into two halves.
    return { output: [...task.instruction].reverse().join('') };
  }
}
