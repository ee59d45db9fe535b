import { SetMetadata } from '@nestjs/common';
import type { Permission } from '../roles/permissions';

/** Route metadata the access layer reads. Controllers declare one of the two on every route. */
export const IS_PUBLIC = 'gatehouse:public';
export const REQUIRED_PERMISSIONS = 'gatehouse:required-permissions';

/** Opts a route out of credential checks. Everything else is denied without a credential. */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);

/**
 * Declares what a route needs. The permission step refuses any non-public route that has no
 * declaration, so a forgotten decorator fails closed. `@RequirePermissions()` with no argument means
 * "any valid credential".
 */
export const RequirePermissions = (...permissions: Permission[]): MethodDecorator & ClassDecorator =>
  SetMetadata(REQUIRED_PERMISSIONS, permissions);
