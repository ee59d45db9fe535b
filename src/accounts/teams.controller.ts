import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { ApiProblems } from '../common/openapi';
import { ListQueryDto, mapPage } from '../common/pagination';
import { RequirePermissions } from '../access/route-access.decorators';
import { AddTeamMemberDto, CreateTeamDto, TeamPage, TeamResponse } from './dto/team.dto';
import { TeamsService } from './teams.service';

@ApiTags('teams')
@Controller('v1/teams')
export class TeamsController {
  constructor(private readonly teams: TeamsService) {}

  @Post()
  @RequirePermissions('teams:create')
  @ApiOperation({ summary: 'Create a team' })
  @ApiCreatedResponse({ type: TeamResponse })
  @ApiProblems(400, 409)
  async create(@Principal() principal: Principal, @Body() dto: CreateTeamDto): Promise<TeamResponse> {
    return TeamResponse.of(await this.teams.create(principal, dto));
  }

  @Get()
  @RequirePermissions('teams:read')
  @ApiOperation({ summary: "List the organization's teams, newest first" })
  @ApiOkResponse({ type: TeamPage })
  @ApiProblems(400)
  async list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<TeamPage> {
    return mapPage(await this.teams.list(principal, query), TeamResponse.of);
  }

  @Get(':id')
  @RequirePermissions('teams:read')
  @ApiOperation({ summary: 'Get a team and its members' })
  @ApiOkResponse({ type: TeamResponse })
  @ApiProblems(404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<TeamResponse> {
    return TeamResponse.of(await this.teams.get(principal, id));
  }

  @Post(':id/members')
  @HttpCode(200)
  @RequirePermissions('teams:update')
  @ApiOperation({ summary: 'Add a user of the organization to the team (idempotent)' })
  @ApiOkResponse({ type: TeamResponse })
  @ApiProblems(400, 404)
  async addMember(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: AddTeamMemberDto,
  ): Promise<TeamResponse> {
    return TeamResponse.of(await this.teams.addMember(principal, id, dto.user_id));
  }

  @Delete(':id/members/:userId')
  @HttpCode(204)
  @RequirePermissions('teams:update')
  @ApiOperation({ summary: 'Remove a member from the team' })
  @ApiNoContentResponse()
  @ApiProblems(404)
  async removeMember(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Param('userId') userId: string,
  ): Promise<void> {
    await this.teams.removeMember(principal, id, userId);
  }
}
