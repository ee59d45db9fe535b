import { Controller, Get, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import '../agents/agents.declarations';
import { RequirePermissions, RequirePermissionsForQuery } from './route-access.decorators';
import { RoutePermissionsCheck } from './route-permissions.check';

@Controller('v1/agents')
class DeclaredController {
  @Get()
  @RequirePermissions('agents:read')
  list(): string[] {
    return [];
  }
}

@Controller('v1/typo')
class TypoController {
  @Get()
  @RequirePermissions('agent:read')
  read(): string {
    return 'unreachable';
  }
}

@Controller('v1/agents-by')
class QueryTypoController {
  @Get()
  @RequirePermissions('agents:read')
  @RequirePermissionsForQuery('view', { full: ['agent:update'] })
  list(): string[] {
    return [];
  }
}

function boot(controller: new () => unknown) {
  @Module({ controllers: [controller] })
  class FeatureModule {}
  return Test.createTestingModule({
    imports: [DiscoveryModule, FeatureModule],
    providers: [RoutePermissionsCheck],
  })
    .compile()
    .then((moduleRef) => moduleRef.init());
}

describe('RoutePermissionsCheck', () => {
  it('lets an app start whose routes require declared permissions', async () => {
    const app = await boot(DeclaredController);
    await app.close();
  });

  it('refuses to start an app whose route requires a permission no module declares', async () => {
    await expect(boot(TypoController)).rejects.toThrow('TypoController.read requires "agent:read"');
  });

  it('refuses one whose route requires, for a query value, a permission no module declares', async () => {
    await expect(boot(QueryTypoController)).rejects.toThrow(
      'QueryTypoController.list requires "agent:update"',
    );
  });
});
