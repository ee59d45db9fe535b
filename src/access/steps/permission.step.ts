import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { missingPermissions, Permission } from '../../roles/permissions';
import type { AccessAttempt, AccessStep, StepOutcome } from '../access-attempt';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import { RouteMetadataCache } from '../route-metadata';
import { REQUIRED_PERMISSIONS } from '../route-access.decorators';

/**
 * Step 3, permission: the route's `@RequirePermissions` against the principal's effective
 * permissions. A route without a declaration is refused, so forgetting one fails closed.
 */
@Injectable()
export class PermissionStep implements AccessStep {
  private readonly required: RouteMetadataCache<Permission[]>;

  constructor(reflector: Reflector) {
    this.required = new RouteMetadataCache(reflector, REQUIRED_PERMISSIONS);
  }

  check({ context, request }: AccessAttempt): StepOutcome {
    const principal = request.principal;
    if (!principal) return new AccessDenial(AccessDenialCode.MissingCredentials, 'A credential is required.');
    const required = this.required.get(context);
    if (!required)
      return new AccessDenial(AccessDenialCode.Forbidden, 'This route declares no permission and is closed.');
    const missing = missingPermissions(principal.permissions, required);
    if (!missing.length) return undefined;
    return new AccessDenial(
      AccessDenialCode.Forbidden,
      `The credential lacks the permission ${missing.join(', ')}.`,
      {},
      { missing_permissions: missing, route: `${request.method} ${request.route?.path ?? request.path}` },
    );
  }
}
