import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { ApiProblems } from '../common/openapi';
import { mapPage } from '../common/pagination';
import { RequirePermissions } from '../access/route-access.decorators';
import { CreateUserDto, ListUsersQueryDto, UpdateUserDto, UserPage, UserResponse } from './dto/user.dto';
import { UsersService } from './users.service';

@ApiTags('users')
@Controller('v1/users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Post()
  @RequirePermissions('users:create')
  @ApiOperation({ summary: "Create a user in the caller's organization" })
  @ApiCreatedResponse({ type: UserResponse })
  @ApiProblems(400, 409)
  async create(@Principal() principal: Principal, @Body() dto: CreateUserDto): Promise<UserResponse> {
    return UserResponse.of(await this.users.create(principal, dto));
  }

  @Get()
  @RequirePermissions('users:read')
  @ApiOperation({ summary: "List the organization's users, newest first" })
  @ApiOkResponse({ type: UserPage })
  @ApiProblems(400)
  async list(@Principal() principal: Principal, @Query() query: ListUsersQueryDto): Promise<UserPage> {
    return mapPage(await this.users.list(principal, query), UserResponse.of);
  }

  @Get(':id')
  @RequirePermissions('users:read')
  @ApiOperation({ summary: 'Get a user' })
  @ApiOkResponse({ type: UserResponse })
  @ApiProblems(404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<UserResponse> {
    return UserResponse.of(await this.users.get(principal, id));
  }

  @Patch(':id')
  @RequirePermissions('users:update')
  @ApiOperation({ summary: "Change a user's name, role or password" })
  @ApiOkResponse({ type: UserResponse })
  @ApiProblems(400, 404)
  async update(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateUserDto,
  ): Promise<UserResponse> {
    return UserResponse.of(await this.users.update(principal, id, dto));
  }

  @Post(':id/deactivate')
  @HttpCode(200)
  @RequirePermissions('users:update')
  @ApiOperation({ summary: 'Deactivate a user: tokens stop working at once and personal keys are revoked' })
  @ApiOkResponse({ type: UserResponse })
  @ApiProblems(404, 409)
  async deactivate(@Principal() principal: Principal, @Param('id') id: string): Promise<UserResponse> {
    return UserResponse.of(await this.users.deactivate(principal, id));
  }

  @Post(':id/activate')
  @HttpCode(200)
  @RequirePermissions('users:update')
  @ApiOperation({ summary: 'Reactivate a user (revoked keys stay revoked)' })
  @ApiOkResponse({ type: UserResponse })
  @ApiProblems(404)
  async activate(@Principal() principal: Principal, @Param('id') id: string): Promise<UserResponse> {
    return UserResponse.of(await this.users.activate(principal, id));
  }
}
