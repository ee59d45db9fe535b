import { Injectable, OnModuleInit } from '@nestjs/common';
import { isIdOf } from '../common/ids';
import type { FileRecord } from '../files/file.entity';
import type { Agent } from './agent.entity';
import { type AgentPricing, MAX_CREDITS, MAX_PRICE } from './agent-pricing';
import { AGENT_ID } from './agents.declarations';
import { AgentError, AgentErrorCode } from './agents.errors';

export interface AgentTask {
  id: string;
  organizationId: string;
  instruction: string;
  attachments: FileRecord[];
  /** Credits reserved for the run (`max_credits`); its usage may not cost more. */
  maxCredits?: number;
  /** The prices the task was created with (what its usage costs). */
  pricing?: AgentPricing;
}

/** What a config is checked against beside itself: the organization whose agent it is. */
export interface AgentConfigContext {
  organizationId: string;
}

/**
 * What an agent type may be called: `agent_type` of tasks and `type` of agents (POST /v1/agents checks it),
 * checked again when a runner registers so a type no request could name never starts.
 */
export const AGENT_TYPE_NAME = /^[a-z][a-z0-9_]{0,49}$/;

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
  /**
   * The run's own reports, stored as the task's events exactly as `POST /v1/tasks/{id}/events` stores an
   * agent's (CONTRACT, "Agent runs"): for runners that run here, with no task token and no request.
   */
  report: AgentRunReporter;
}

/** A reported event's number in its task (the SSE `id:`). */
export interface ReportedEvent {
  seq: number;
}

/**
 * Reports of one attempt of a run: each is checked and appended as the task's next event, as an agent's
 * post with its task token is, and refused with the same errors: 400 `validation_failed` (data out of
 * bounds), 429 `too_many_task_events` (the task holds 10,000 events), 401 `task_token_expired` once this
 * attempt has ended (returned, failed, cancelled, its lease lost or taken over). Usage adds up and costs
 * credits at the task's pricing; usage that passes its `max_credits` ends the task as failed,
 * `budget_exceeded`, and the run's `signal` is aborted. Await each: the worker records the run's outcome
 * after the reports in flight when it returned.
 */
export interface AgentRunReporter {
  /** A `progress` event; the task's `progress` becomes it. `message` ≤ 1000 characters, `percent` 0..100. */
  progress(progress: { message?: string; percent?: number }): Promise<ReportedEvent>;
  /** An `output` event: the next piece of the run's output, at most 64 KiB. */
  output(delta: string): Promise<ReportedEvent>;
  /** A `usage` event: tokens used since the last one (usage events add up), integers ≥ 0. */
  usage(usage: { input_tokens: number; output_tokens: number }): Promise<ReportedEvent>;
}

/**
 * A failure the runner understands; `retryable` failures are tried again with backoff, and not before
 * `retryAfterMs` when the agent named a wait (an upstream's Retry-After; the worker caps it at a minute).
 */
export class AgentFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retryable: boolean,
    readonly retryAfterMs?: number,
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
  /**
   * What a run of a task naming this agent (`agent_id`) costs, as a configured agent's `pricing` (CONTRACT,
   * "Costs"); absent: free.
   */
  readonly pricing?: AgentPricing;
  /** Credits such a task reserves when it names no `max_credits`; absent: 0. */
  readonly defaultMaxCredits?: number;
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
  /** The agents of this type every organization has (docs/extending.md); none when absent. */
  readonly builtInAgents?: readonly BuiltInAgent[];
  /**
   * False when the runner never calls out on the caller's behalf: the caller's key is then not kept
   * (sealed) with its tasks at all. Absent means it may, so `outboundHeaders` carries the key.
   */
  readonly forwardsCredentials?: boolean;
  /**
   * Checks an agent's `config` at create/update time; throws a 400 ProblemException when invalid.
   * `context` names the organization, for configs that name its resources (an llm agent's secret).
   */
  validateConfig(config: Record<string, unknown>, context?: AgentConfigContext): Promise<void>;
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
    // POST /v1/tasks and POST /v1/agents could never name it: its tasks would run only from code.
    if (!AGENT_TYPE_NAME.test(runner.type)) {
      throw new Error(
        `agent type "${runner.type}" is not a valid type name: a lowercase letter, then up to 49 lowercase ` +
          `letters, digits or underscores (${AGENT_TYPE_NAME.source})`,
      );
    }
    if (this.runners.has(runner.type)) throw new Error(`agent type "${runner.type}" is registered twice`);
    const builtIns = (runner.builtInAgents ?? []).map((agent) => ({ ...agent, type: runner.type }));
    for (const agent of builtIns) {
      // An id of another shape would answer 404 on GET /v1/agents/{id} and break the list's cursor.
      if (!isIdOf(AGENT_ID, agent.id))
        throw new Error(`built-in agent id "${agent.id}" is not builtInAgentId(…)`);
      checkBuiltInCosts(agent);
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

/** A built-in agent's pricing and default reservation, held to the bounds POST /v1/agents holds an agent's to. */
function checkBuiltInCosts(agent: TypedBuiltInAgent): void {
  const prices = agent.pricing
    ? [agent.pricing.credits_per_1k_input_tokens, agent.pricing.credits_per_1k_output_tokens]
    : [];
  if (prices.some((price) => typeof price !== 'number' || !(price >= 0 && price <= MAX_PRICE))) {
    throw new Error(
      `built-in agent "${agent.name}" (${agent.type}): pricing needs credits_per_1k_input_tokens and ` +
        `credits_per_1k_output_tokens, each a number from 0 to ${MAX_PRICE}`,
    );
  }
  const reserve = agent.defaultMaxCredits;
  if (reserve !== undefined && !(Number.isInteger(reserve) && reserve >= 0 && reserve <= MAX_CREDITS)) {
    throw new Error(
      `built-in agent "${agent.name}" (${agent.type}): defaultMaxCredits must be an integer from 0 to ${MAX_CREDITS}`,
    );
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
