import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { ANY_CREDENTIAL, Operation } from '../access/route-access.decorators';
import { PermissionCatalogueResponse } from './dto/role.dto';
import { permissionCatalogue } from './permissions';

@ApiTags('roles')
@Controller('v1/permissions')
export class PermissionsController {
  // The vocabulary roles are written in, as this server's modules declare it: a client (the dashboard's
  // permission matrix) builds its choices from it instead of a copy that goes stale when a module adds
  // a resource. Any credential may read it; it names what exists, not who holds it.
  @Get()
  @Operation(ANY_CREDENTIAL, 'List every resource and its actions', PermissionCatalogueResponse)
  catalogue(): PermissionCatalogueResponse {
    return {
      data: permissionCatalogue().map(({ resource, actions }) => ({ resource, actions: [...actions] })),
    };
  }
}
