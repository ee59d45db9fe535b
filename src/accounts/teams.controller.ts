import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import type { RequestOrigin } from '../audit/audit.service';
import { Origin } from '../audit/request-origin.decorator';
import { ListQueryDto, mapPage } from '../common/pagination';
import { Created, NoContent, Operation } from '../access/route-access.decorators';
import { AddTeamMemberDto, CreateTeamDto, TeamPage, TeamResponse } from './dto/team.dto';
import { TeamsService } from './teams.service';

@ApiTags('teams')
@Controller('v1/teams')
export class TeamsController {
  constructor(private readonly teams: TeamsService) {}

  @Post()
  @Operation('teams:create', 'Create a team', Created(TeamResponse), 400, 409)
  async create(
    @Principal() principal: Principal,
    @Body() dto: CreateTeamDto,
    @Origin() origin: RequestOrigin,
  ): Promise<TeamResponse> {
    return TeamResponse.of(await this.teams.create(principal, dto, origin));
  }

  @Get()
  @Operation('teams:read', "List the organization's teams, newest first", TeamPage, 400)
  async list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<TeamPage> {
    return mapPage(await this.teams.list(principal, query), TeamResponse.of);
  }

  @Get(':id')
  @Operation('teams:read', 'Get a team and its members', TeamResponse, 404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<TeamResponse> {
    return TeamResponse.of(await this.teams.get(principal, id));
  }

  @Post(':id/members')
  @HttpCode(200)
  @Operation(
    'teams:update',
    'Add a user of the organization to the team (idempotent)',
    TeamResponse,
    400,
    404,
  )
  async addMember(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: AddTeamMemberDto,
    @Origin() origin: RequestOrigin,
  ): Promise<TeamResponse> {
    return TeamResponse.of(await this.teams.addMember(principal, id, dto.user_id, origin));
  }

  @Delete(':id/members/:userId')
  @HttpCode(204)
  @Operation('teams:update', 'Remove a member from the team', NoContent, 404)
  async removeMember(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Param('userId') userId: string,
    @Origin() origin: RequestOrigin,
  ): Promise<void> {
    await this.teams.removeMember(principal, id, userId, origin);
  }
}
