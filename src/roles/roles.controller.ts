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
import { CreateRoleDto, RolePage, RoleResponse, UpdateRoleDto } from './dto/role.dto';
import { RequirePermissions } from '../access/route-access.decorators';
import { RolesService } from './roles.service';

@ApiTags('roles')
@Controller('v1/roles')
export class RolesController {
  constructor(private readonly roles: RolesService) {}

  @Post()
  @RequirePermissions('roles:create')
  @ApiOperation({ summary: 'Create a custom role (no permission the caller lacks)' })
  @ApiCreatedResponse({ type: RoleResponse })
  @ApiProblems(400, 409)
  create(@Principal() principal: Principal, @Body() dto: CreateRoleDto): Promise<RoleResponse> {
    return this.roles.create(principal, dto);
  }

  @Get()
  @RequirePermissions('roles:read')
  @ApiOperation({ summary: 'List built-in and custom roles' })
  @ApiOkResponse({ type: RolePage })
  @ApiProblems(400)
  list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<RolePage> {
    return this.roles.list(principal, query);
  }

  @Get(':roleName')
  @RequirePermissions('roles:read')
  @ApiOperation({ summary: 'Get a role by name' })
  @ApiOkResponse({ type: RoleResponse })
  @ApiProblems(404)
  get(@Principal() principal: Principal, @Param('roleName') roleName: string): Promise<RoleResponse> {
    return this.roles.get(principal, roleName);
  }

  @Patch(':roleName')
  @RequirePermissions('roles:update')
  @ApiOperation({ summary: "Replace a custom role's permissions; applies to its holders at once" })
  @ApiOkResponse({ type: RoleResponse })
  @ApiProblems(400, 404, 409)
  update(
    @Principal() principal: Principal,
    @Param('roleName') roleName: string,
    @Body() dto: UpdateRoleDto,
  ): Promise<RoleResponse> {
    return this.roles.update(principal, roleName, dto);
  }

  @Delete(':roleName')
  @HttpCode(204)
  @RequirePermissions('roles:delete')
  @ApiOperation({ summary: 'Delete a custom role that nobody holds (409 otherwise)' })
  @ApiNoContentResponse()
  @ApiProblems(404, 409)
  async delete(@Principal() principal: Principal, @Param('roleName') roleName: string): Promise<void> {
    await this.roles.delete(principal, roleName);
  }
}
