import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import type { RequestOrigin } from '../audit/audit.service';
import { Origin } from '../audit/request-origin.decorator';
import { mapPage } from '../common/pagination';
import { Created, Operation } from '../access/route-access.decorators';
import { CreateUserDto, ListUsersQueryDto, UpdateUserDto, UserPage, UserResponse } from './dto/user.dto';
import { UsersService } from './users.service';

@ApiTags('users')
@Controller('v1/users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Post()
  @Operation('users:create', "Create a user in the caller's organization", Created(UserResponse), 400, 409)
  async create(
    @Principal() principal: Principal,
    @Body() dto: CreateUserDto,
    @Origin() origin: RequestOrigin,
  ): Promise<UserResponse> {
    return UserResponse.of(await this.users.create(principal, dto, origin));
  }

  @Get()
  @Operation('users:read', "List the organization's users, newest first", UserPage, 400)
  async list(@Principal() principal: Principal, @Query() query: ListUsersQueryDto): Promise<UserPage> {
    return mapPage(await this.users.list(principal, query), UserResponse.of);
  }

  @Get(':id')
  @Operation('users:read', 'Get a user', UserResponse, 404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<UserResponse> {
    return UserResponse.of(await this.users.get(principal, id));
  }

  @Patch(':id')
  @Operation('users:update', "Change a user's name, role or password", UserResponse, 400, 404)
  async update(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateUserDto,
    @Origin() origin: RequestOrigin,
  ): Promise<UserResponse> {
    return UserResponse.of(await this.users.update(principal, id, dto, origin));
  }

  @Post(':id/deactivate')
  @HttpCode(200)
  @Operation(
    'users:update',
    'Deactivate a user: tokens stop working at once and personal keys are revoked',
    UserResponse,
    404,
    409,
  )
  async deactivate(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Origin() origin: RequestOrigin,
  ): Promise<UserResponse> {
    return UserResponse.of(await this.users.deactivate(principal, id, origin));
  }

  @Post(':id/activate')
  @HttpCode(200)
  @Operation('users:update', 'Reactivate a user (revoked keys stay revoked)', UserResponse, 404)
  async activate(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Origin() origin: RequestOrigin,
  ): Promise<UserResponse> {
    return UserResponse.of(await this.users.activate(principal, id, origin));
  }
}
