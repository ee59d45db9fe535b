import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { isPermission, type Permission } from '../roles/permissions';
import { QUERY_PERMISSIONS, QueryPermissions, REQUIRED_PERMISSIONS } from './route-access.decorators';

/**
 * Refuses to start when a route requires a permission no module declares (`definePermissions`): such a
 * route could never be reached, and a typo in `@RequirePermissions('dataset:read')` should fail the
 * start, not every request.
 */
@Injectable()
export class RoutePermissionsCheck implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    const unknown: string[] = [];
    for (const { metatype } of this.discovery.getControllers()) {
      if (typeof metatype !== 'function') continue;
      const prototype = metatype.prototype as Record<string, () => unknown>;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const byQuery = this.reflector.get<QueryPermissions | undefined>(QUERY_PERMISSIONS, prototype[name]);
        const required = [
          ...(this.reflector.getAllAndOverride<Permission[] | undefined>(REQUIRED_PERMISSIONS, [
            prototype[name],
            metatype,
          ]) ?? []),
          ...Object.values(byQuery?.byValue ?? {}).flat(),
        ];
        for (const permission of required.filter((p) => !isPermission(p))) {
          unknown.push(`${metatype.name}.${name} requires "${permission}"`);
        }
      }
    }
    if (unknown.length) {
      throw new Error(
        `Routes require permissions no module declares (definePermissions): ${unknown.join('; ')}`,
      );
    }
  }
}
