import { Injectable } from '@nestjs/common';
import type { Principal } from '../access/principal';
import { batchedReadsById } from '../common/batched-reads';
import { isIdOf, newId } from '../common/ids';
import { AGENT_ID } from './agents.declarations';
import { ListQueryDto, Page } from '../common/pagination';
import { InvalidationBus } from '../cache-invalidation/invalidation-bus';
import { Agent } from './agent.entity';
import { AgentRunner, AgentRunners, TypedBuiltInAgent } from './agent-runner';
import { AgentsRepository } from './agents.repository';
import { AgentPage, AgentResponse, CreateAgentDto, UpdateAgentDto } from './dto/agent.dto';
import { AgentError, AgentErrorCode } from './agents.errors';
import { ECHO_BUILT_IN } from './runners/echo.runner';

/** The built-in echo agent as GET /v1/agents lists it for every organization (the echo runner declares it). */
export const ECHO_AGENT: AgentResponse = AgentResponse.ofBuiltIn({ ...ECHO_BUILT_IN, type: 'echo' });

@Injectable()
export class AgentsService {
  constructor(
    private readonly agents: AgentsRepository,
    private readonly runners: AgentRunners,
    private readonly invalidations: InvalidationBus,
  ) {}

  async create(principal: Principal, dto: CreateAgentDto): Promise<Agent> {
    const runner = this.runnerOrFail(dto.type);
    const config = dto.config ?? {};
    await runner.validateConfig(config, { organizationId: principal.organizationId });
    const agent = await this.agents.insert({
      id: newId(AGENT_ID),
      organizationId: principal.organizationId,
      name: dto.name,
      type: dto.type,
      description: dto.description ?? null,
      config,
      pricing: dto.pricing ? { ...dto.pricing } : null,
      defaultMaxCredits: dto.default_max_credits ?? null,
    });
    this.agentsChanged(principal);
    return agent;
  }

  /** Every instance hears that the organization's agents changed (MCP's open streams list them as tools). */
  private agentsChanged(principal: Principal): void {
    this.invalidations.publish({ kind: 'agents', organizationId: principal.organizationId });
  }

  async list(principal: Principal, query: ListQueryDto): Promise<AgentPage> {
    const page: Page<Agent> = await this.agents.page(principal.organizationId, query);
    // The registered runners' built-in agents head the first page, on top of the limit.
    const builtIns = query.cursor ? [] : this.runners.builtInAgents().map(AgentResponse.ofBuiltIn);
    return { data: [...builtIns, ...page.data.map(AgentResponse.of)], next_cursor: page.next_cursor };
  }

  /**
   * Every agent the organization can run, oldest first: the built-in ones (every organization has them
   * from the start), then its own by creation time; at most `limit` of its own. MCP makes one tool of each.
   */
  async allOldestFirst(principal: Principal, limit: number): Promise<AgentResponse[]> {
    const own = await this.agents.oldestFirst(principal.organizationId, limit);
    return [...this.runners.builtInAgents().map(AgentResponse.ofBuiltIn), ...own.map(AgentResponse.of)];
  }

  /** A registered runner's built-in agent (every organization has it), or undefined. */
  builtIn(id: string): AgentResponse | undefined {
    const agent = this.runners.builtInAgent(id);
    return agent && AgentResponse.ofBuiltIn(agent);
  }

  /** One of the organization's own agents (a row); built-in agents are not among them (builtIn). */
  get(principal: Principal, id: string): Promise<Agent> {
    return agentOrNotFound(id, (agentId) =>
      this.agents.findInOrganization(principal.organizationId, agentId),
    );
  }

  /**
   * The agent a new task names: one of the organization's, as get() answers it, batched with the other
   * task creations of the same event-loop turn (batchedReadsById): under load, many tasks for one agent
   * cost one row; or a built-in agent, with the pricing its runner declares, so a task naming it is priced
   * as one naming a configured agent. Read it, never change it.
   */
  getForNewTask(principal: Principal, id: string): Promise<Readonly<Agent>> {
    const builtIn = this.runners.builtInAgent(id);
    if (builtIn) return Promise.resolve(builtInAsAgent(builtIn, principal.organizationId));
    return agentOrNotFound(id, (agentId) => this.agentReads(principal.organizationId, agentId));
  }

  /**
   * What a task naming only its type (no agent_id) is priced as: the type's first built-in agent, if
   * its runner declares any. Without it, leaving out agent_id would make a priced built-in agent free.
   */
  builtInForType(principal: Principal, type: string): Readonly<Agent> | null {
    const first = this.runners.builtInAgents().find((agent) => agent.type === type);
    return first ? builtInAsAgent(first, principal.organizationId) : null;
  }

  private readonly agentReads = batchedReadsById((refs) => this.agents.findAmong(refs));

  /** An agent by id within an organization, for work done outside a request (task workers). */
  findInOrganization(organizationId: string, id: string): Promise<Agent | null> {
    return this.agents.findInOrganization(organizationId, id);
  }

  async update(principal: Principal, id: string, dto: UpdateAgentDto): Promise<Agent> {
    const agent = await this.get(principal, id);
    if (dto.config !== undefined) {
      await this.runnerOrFail(agent.type).validateConfig(dto.config, {
        organizationId: agent.organizationId,
      });
      agent.config = dto.config;
    }
    if (dto.name !== undefined) agent.name = dto.name;
    if (dto.description !== undefined) agent.description = dto.description;
    if (dto.pricing !== undefined) agent.pricing = dto.pricing && { ...dto.pricing };
    if (dto.default_max_credits !== undefined) agent.defaultMaxCredits = dto.default_max_credits;
    const saved = await this.agents.save(agent);
    if (dto.name !== undefined || dto.description !== undefined) this.agentsChanged(principal);
    return saved;
  }

  async delete(principal: Principal, id: string): Promise<void> {
    const agent = await this.get(principal, id);
    await this.agents.delete(agent.id);
    this.agentsChanged(principal);
  }

  /** The runner of an agent type, if one is registered. */
  runnerOf(type: string): AgentRunner | undefined {
    return this.runners.get(type);
  }

  agentTypes(): string[] {
    return this.runners.types();
  }

  /** The runner of an agent definition's type; refused when no such type is registered. */
  private runnerOrFail(type: string): AgentRunner {
    const runner = this.runners.get(type);
    if (!runner) {
      throw new AgentError(
        AgentErrorCode.UnknownAgentType,
        `There is no agent type "${type}"; known types: ${this.runners.types().join(', ')}.`,
        { errors: [{ field: 'type', message: `unknown agent type "${type}"` }] },
      );
    }
    return runner;
  }
}

// A built-in agent has no row: no creation time (GET /v1/agents shows null), config or organization of its own.
const NO_ROW_TIME = new Date(0);

function builtInAsAgent(agent: TypedBuiltInAgent, organizationId: string): Readonly<Agent> {
  return Object.freeze({
    id: agent.id,
    organizationId,
    name: agent.name,
    type: agent.type,
    description: agent.description,
    config: {},
    pricing: agent.pricing ? { ...agent.pricing } : null,
    defaultMaxCredits: agent.defaultMaxCredits ?? null,
    createdAt: NO_ROW_TIME,
    updatedAt: NO_ROW_TIME,
  });
}

/** The agent `find` answers for a well-formed agent id; not_found for any other id or no row. */
async function agentOrNotFound<Found extends Readonly<Agent>>(
  id: string,
  find: (agentId: string) => Promise<Found | null>,
): Promise<Found> {
  const agent = isIdOf(AGENT_ID, id) ? await find(id) : null;
  if (!agent) throw new AgentError(AgentErrorCode.NotFound, 'The agent was not found.');
  return agent;
}
