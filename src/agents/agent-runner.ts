import { Injectable } from '@nestjs/common';
import type { FileRecord } from '../files/file.entity';
import type { Agent } from './agent.entity';

export interface AgentTask {
  id: string;
  organizationId: string;
  instruction: string;
  attachments: FileRecord[];
}

export interface AgentRunContext {
  task: AgentTask;
  /** The configured agent, for runner types that need one. */
  agent: Agent | null;
  /** What an outbound call may carry for the caller (the key in X-API-Key unless hide_credentials). */
  outboundHeaders: Record<string, string>;
  /** Aborted when the task is cancelled, its lease is lost, or the process shuts down. */
  signal: AbortSignal;
}

/** A failure the runner understands; `retryable` failures are tried again with backoff. */
export class AgentFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'AgentFailure';
  }
}

/**
 * An agent type. To add one, implement this in a module of your own and register it on
 * AgentRunners in `onModuleInit`; tasks with that `agent_type` then run through it.
 */
export interface AgentRunner {
  readonly type: string;
  /** True when tasks must name a configured agent (`agent_id`) of this type. */
  readonly needsAgent: boolean;
  /**
   * False when the runner never calls out on the caller's behalf: the caller's key is then not kept
   * (sealed) with its tasks at all. Absent means it may, so `outboundHeaders` carries the key.
   */
  readonly forwardsCredentials?: boolean;
  /** Checks an agent's `config` at create/update time; throws a 400 ProblemException when invalid. */
  validateConfig(config: Record<string, unknown>): Promise<void>;
  run(context: AgentRunContext): Promise<unknown>;
}

/** The registry of agent types. */
@Injectable()
export class AgentRunners {
  private readonly runners = new Map<string, AgentRunner>();

  register(runner: AgentRunner): void {
    if (this.runners.has(runner.type)) throw new Error(`agent type "${runner.type}" is registered twice`);
    this.runners.set(runner.type, runner);
  }

  get(type: string): AgentRunner | undefined {
    return this.runners.get(type);
  }

  types(): string[] {
    return [...this.runners.keys()].sort();
  }
}
