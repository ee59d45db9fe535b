import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { ApiProblems } from '../common/openapi';
import { ListQueryDto } from '../common/pagination';
import { RequirePermissions } from '../access/route-access.decorators';
import { AgentsService } from './agents.service';
import { AgentPage, AgentResponse, CreateAgentDto, UpdateAgentDto } from './dto/agent.dto';

@ApiTags('agents')
@Controller('v1/agents')
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  @Get()
  @RequirePermissions('agents:read')
  @ApiOperation({
    summary:
      "Agents visible to the caller: the built-in agents of the registered agent types (echo, …), then the organization's own",
  })
  @ApiOkResponse({ type: AgentPage })
  @ApiProblems(400)
  list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<AgentPage> {
    return this.agents.list(principal, query);
  }

  @Post()
  @RequirePermissions('agents:create')
  @ApiOperation({ summary: 'Define an agent, e.g. {type: "http", config: {url}}' })
  @ApiCreatedResponse({ type: AgentResponse })
  @ApiProblems(400)
  async create(@Principal() principal: Principal, @Body() dto: CreateAgentDto): Promise<AgentResponse> {
    return AgentResponse.of(await this.agents.create(principal, dto));
  }

  @Get(':id')
  @RequirePermissions('agents:read')
  @ApiOperation({ summary: 'Get an agent' })
  @ApiOkResponse({ type: AgentResponse })
  @ApiProblems(404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<AgentResponse> {
    return this.agents.builtIn(id) ?? AgentResponse.of(await this.agents.get(principal, id));
  }

  @Patch(':id')
  @RequirePermissions('agents:update')
  @ApiOperation({ summary: "Change an agent's name, description or config" })
  @ApiOkResponse({ type: AgentResponse })
  @ApiProblems(400, 404)
  async update(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateAgentDto,
  ): Promise<AgentResponse> {
    return AgentResponse.of(await this.agents.update(principal, id, dto));
  }

  @Delete(':id')
  @HttpCode(204)
  @RequirePermissions('agents:delete')
  @ApiOperation({ summary: 'Delete an agent' })
  @ApiNoContentResponse()
  @ApiProblems(404)
  async delete(@Principal() principal: Principal, @Param('id') id: string): Promise<void> {
    await this.agents.delete(principal, id);
  }
}
