import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { ListQueryDto } from '../common/pagination';
import { Created, NoContent, Operation } from '../access/route-access.decorators';
import { AgentsService } from './agents.service';
import { AgentPage, AgentResponse, CreateAgentDto, UpdateAgentDto } from './dto/agent.dto';

@ApiTags('agents')
@Controller('v1/agents')
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  @Get()
  @Operation(
    'agents:read',
    "Agents visible to the caller: the built-in agents of the registered agent types (echo, …), then the organization's own",
    AgentPage,
    400,
  )
  list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<AgentPage> {
    return this.agents.list(principal, query);
  }

  @Post()
  @Operation(
    'agents:create',
    'Define an agent, e.g. {type: "http", config: {url}}',
    Created(AgentResponse),
    400,
  )
  async create(@Principal() principal: Principal, @Body() dto: CreateAgentDto): Promise<AgentResponse> {
    return AgentResponse.of(await this.agents.create(principal, dto));
  }

  @Get(':id')
  @Operation('agents:read', 'Get an agent', AgentResponse, 404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<AgentResponse> {
    return this.agents.builtIn(id) ?? AgentResponse.of(await this.agents.get(principal, id));
  }

  @Patch(':id')
  @Operation('agents:update', "Change an agent's name, description or config", AgentResponse, 400, 404)
  async update(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateAgentDto,
  ): Promise<AgentResponse> {
    return AgentResponse.of(await this.agents.update(principal, id, dto));
  }

  @Delete(':id')
  @HttpCode(204)
  @Operation('agents:delete', 'Delete an agent', NoContent, 404)
  async delete(@Principal() principal: Principal, @Param('id') id: string): Promise<void> {
    await this.agents.delete(principal, id);
  }
}
