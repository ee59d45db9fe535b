import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import type { RequestOrigin } from '../audit/audit.service';
import { Origin } from '../audit/request-origin.decorator';
import { ListQueryDto } from '../common/pagination';
import { CreateRoleDto, RolePage, RoleResponse, UpdateRoleDto } from './dto/role.dto';
import { Created, NoContent, Operation } from '../access/route-access.decorators';
import { RolesService } from './roles.service';

@ApiTags('roles')
@Controller('v1/roles')
export class RolesController {
  constructor(private readonly roles: RolesService) {}

  @Post()
  @Operation(
    'roles:create',
    'Create a custom role (no permission the caller lacks)',
    Created(RoleResponse),
    400,
    409,
  )
  create(
    @Principal() principal: Principal,
    @Body() dto: CreateRoleDto,
    @Origin() origin: RequestOrigin,
  ): Promise<RoleResponse> {
    return this.roles.create(principal, dto, origin);
  }

  @Get()
  @Operation('roles:read', 'List built-in and custom roles', RolePage, 400)
  list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<RolePage> {
    return this.roles.list(principal, query);
  }

  @Get(':roleName')
  @Operation('roles:read', 'Get a role by name', RoleResponse, 404)
  get(@Principal() principal: Principal, @Param('roleName') roleName: string): Promise<RoleResponse> {
    return this.roles.get(principal, roleName);
  }

  @Patch(':roleName')
  @Operation(
    'roles:update',
    "Replace a custom role's permissions; applies to its holders at once",
    RoleResponse,
    400,
    404,
    409,
  )
  update(
    @Principal() principal: Principal,
    @Param('roleName') roleName: string,
    @Body() dto: UpdateRoleDto,
    @Origin() origin: RequestOrigin,
  ): Promise<RoleResponse> {
    return this.roles.update(principal, roleName, dto, origin);
  }

  @Delete(':roleName')
  @HttpCode(204)
  @Operation('roles:delete', 'Delete a custom role that nobody holds (409 otherwise)', NoContent, 404, 409)
  async delete(
    @Principal() principal: Principal,
    @Param('roleName') roleName: string,
    @Origin() origin: RequestOrigin,
  ): Promise<void> {
    await this.roles.delete(principal, roleName, origin);
  }
}
