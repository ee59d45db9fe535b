import { Injectable, OnModuleInit } from '@nestjs/common';
import { isIdOf } from '../common/ids';
import type { FileRecord } from '../files/file.entity';
import type { Agent } from './agent.entity';
import { AGENT_ID } from './agents.declarations';
import { AgentError, AgentErrorCode } from './agents.errors';

export interface AgentTask {
  id: string;
  organizationId: string;
  instruction: string;
  attachments: FileRecord[];
}

/** The header a runner that calls out sends the run's task token in (CONTRACT, "Agent runs"). */
export const TASK_TOKEN_HEADER = 'X-Gatehouse-Task-Token';

export interface AgentRunContext {
  task: AgentTask;
  /** The configured agent, for runner types that need one. */
  agent: Agent | null;
  /**
   * What an outbound call carries: the run's task token in X-Gatehouse-Task-Token, and the caller's key
   * in X-API-Key unless it hides credentials.
   */
  outboundHeaders: Record<string, string>;
  /**
   * The run's task token (`gtt_…`), for runners that call out (`forwardsCredentials` not false): the
   * agent presents it as `Authorization: Bearer` to read the task and its files, upload output files and
   * post events. Refused (401 task_token_expired) once this attempt ends.
   */
  taskToken?: string;
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
 * An agent of a runner's type that every organization has without defining it (the contract's `echo`):
 * `GET /v1/agents` lists it first, with `built_in: true` and `created_at: null`. It has no row.
 */
export interface BuiltInAgent {
  /** `builtInAgentId('Echo')`: the same on every server and after every restart, so clients may keep it. */
  readonly id: string;
  readonly name: string;
  readonly description: string | null;
}

// Letters and digits (base62, as every id), not ending in 0: the zeros that pad the id would make
// `Echo` and `Echo0` one id.
const BUILT_IN_NAME = /^[A-Za-z0-9]{0,14}[A-Za-z1-9]$/;
const ID_SUFFIX_LENGTH = 22;

/**
 * The id of a built-in agent: `agent_builtin<Name>` padded with zeros to the length of every agent id,
 * so it has the shape clients and cursors expect and is never one a random id takes. `Echo` gives
 * `agent_builtinEcho00000000000`, the id the echo agent has always had.
 */
export function builtInAgentId(name: string): string {
  if (!BUILT_IN_NAME.test(name)) {
    throw new Error(`built-in agent name "${name}" must be 1-15 letters or digits, not ending in 0`);
  }
  return `${AGENT_ID.prefix}_${`builtin${name}`.padEnd(ID_SUFFIX_LENGTH, '0')}`;
}

/** `validateConfig` of a type whose agents take no config: anything in it is refused (400 invalid_config). */
export function refuseAnyConfig(type: string, config: Record<string, unknown>): void {
  if (Object.keys(config).length) {
    throw new AgentError(AgentErrorCode.InvalidConfig, `The ${type} agent takes no config.`, {
      errors: [{ field: 'config', message: `the ${type} agent takes no config` }],
    });
  }
}

/**
 * An agent type. To add one, implement this in a module of your own and register it on
 * AgentRunners in `onModuleInit`; tasks with that `agent_type` then run through it. Load that module
 * through an extension (src/extension.ts) so the API and the worker both have it.
 */
export interface AgentRunner {
  readonly type: string;
  /** True when tasks must name a configured agent (`agent_id`) of this type. */
  readonly needsAgent: boolean;
  /** The agents of this type every organization has (README, "Extending"); none when absent. */
  readonly builtInAgents?: readonly BuiltInAgent[];
  /**
   * False when the runner never calls out on the caller's behalf: the caller's key is then not kept
   * (sealed) with its tasks at all. Absent means it may, so `outboundHeaders` carries the key.
   */
  readonly forwardsCredentials?: boolean;
  /** Checks an agent's `config` at create/update time; throws a 400 ProblemException when invalid. */
  validateConfig(config: Record<string, unknown>): Promise<void>;
  run(context: AgentRunContext): Promise<unknown>;
}

/** A built-in agent with the type of the runner that declares it. */
export interface TypedBuiltInAgent extends BuiltInAgent {
  readonly type: string;
}

/** The registry of agent types, and of the built-in agents their runners declare. */
@Injectable()
export class AgentRunners {
  private readonly runners = new Map<string, AgentRunner>();
  private readonly builtIns = new Map<string, TypedBuiltInAgent>();

  register(runner: AgentRunner): void {
    if (this.runners.has(runner.type)) throw new Error(`agent type "${runner.type}" is registered twice`);
    const builtIns = (runner.builtInAgents ?? []).map((agent) => ({ ...agent, type: runner.type }));
    for (const agent of builtIns) {
      // An id of another shape would answer 404 on GET /v1/agents/{id} and break the list's cursor.
      if (!isIdOf(AGENT_ID, agent.id))
        throw new Error(`built-in agent id "${agent.id}" is not builtInAgentId(…)`);
      const taken = this.builtIns.get(agent.id);
      if (taken || builtIns.filter((other) => other.id === agent.id).length > 1) {
        throw new Error(`built-in agent id "${agent.id}" is declared twice (${taken?.type ?? runner.type})`);
      }
    }
    this.runners.set(runner.type, runner);
    for (const agent of builtIns) this.builtIns.set(agent.id, agent);
  }

  get(type: string): AgentRunner | undefined {
    return this.runners.get(type);
  }

  types(): string[] {
    return [...this.runners.keys()].sort();
  }

  /** Every runner's built-in agents, by type (then as each runner lists them): the order never depends on module order. */
  builtInAgents(): TypedBuiltInAgent[] {
    return this.types().flatMap((type) => [...this.builtIns.values()].filter((agent) => agent.type === type));
  }

  builtInAgent(id: string): TypedBuiltInAgent | undefined {
    return this.builtIns.get(id);
  }
}

/**
 * The simplest agent type: it answers from the task alone, so its agents take no config and the caller's
 * key is not kept with its tasks, and it registers itself when its module starts (in the API and the
 * worker alike). Extend it, give `type`, `builtInAgents` and `run`, and provide the class in a module.
 */
@Injectable()
export abstract class LocalAgentRunner implements AgentRunner, OnModuleInit {
  abstract readonly type: string;
  abstract readonly builtInAgents: readonly BuiltInAgent[];
  // Tasks name the type; an organization may still define agents of it (POST /v1/agents).
  readonly needsAgent = false;
  readonly forwardsCredentials = false;

  constructor(private readonly runners: AgentRunners) {}

  onModuleInit(): void {
    this.runners.register(this);
  }

  async validateConfig(config: Record<string, unknown>): Promise<void> {
    refuseAnyConfig(this.type, config);
  }

  abstract run(context: AgentRunContext): Promise<unknown>;
}
