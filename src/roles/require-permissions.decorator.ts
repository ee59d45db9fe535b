import { SetMetadata } from '@nestjs/common';
import type { Permission } from './permissions';

export const REQUIRED_PERMISSIONS = 'gatehouse:required-permissions';

/**
 * Declares what a route needs. RolesGuard refuses any non-public route that has no declaration, so a
 * forgotten decorator fails closed. `@RequirePermissions()` with no argument means "any valid credential".
 */
export const RequirePermissions = (...permissions: Permission[]): MethodDecorator & ClassDecorator =>
  SetMetadata(REQUIRED_PERMISSIONS, permissions);
