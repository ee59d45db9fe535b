import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';
import { ApiProblems, PUBLIC_OPERATION } from '../common/openapi';
import type { Permission } from '../roles/permissions';

/** Route metadata the access layer reads. Controllers declare one of the two on every route. */
export const IS_PUBLIC = 'gatehouse:public';
export const REQUIRED_PERMISSIONS = 'gatehouse:required-permissions';

/**
 * Opts a route out of credential checks. Everything else is denied without a credential. In the
 * OpenAPI document the operation needs no security (see finishOpenApiDocument).
 */
export const Public = (): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(IS_PUBLIC, true), ApiExtension(PUBLIC_OPERATION, true));

/** What any route behind the key check can answer, whatever it does: documented once, here. */
const KEY_CHECK_PROBLEMS = [401, 403, 429, 503];

/**
 * Declares what a route needs. The permission step refuses any non-public route that has no
 * declaration, so a forgotten decorator fails closed. `@RequirePermissions()` with no argument means
 * "any valid credential".
 */
export const RequirePermissions = (...permissions: Permission[]): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(REQUIRED_PERMISSIONS, permissions), ApiProblems(...KEY_CHECK_PROBLEMS));
