import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AuditService } from '../audit/audit.service';
import { originOf } from '../audit/request-origin.decorator';
import { IS_PUBLIC } from '../common/decorators';
import { RouteMetadataCache } from '../common/route-metadata';
import { forbidden, unauthorized } from '../common/problem';
import { missingPermissions, Permission } from './permissions';
import { REQUIRED_PERMISSIONS } from './require-permissions.decorator';

/**
 * Second global guard: compares the route's `@RequirePermissions` declaration with the principal's
 * effective permissions. A route without a declaration is refused, so forgetting one fails closed.
 */
@Injectable()
export class RolesGuard implements CanActivate {
  private readonly isPublic: RouteMetadataCache<boolean>;
  private readonly required: RouteMetadataCache<Permission[]>;

  constructor(
    reflector: Reflector,
    private readonly audit: AuditService,
  ) {
    this.isPublic = new RouteMetadataCache(reflector, IS_PUBLIC);
    this.required = new RouteMetadataCache(reflector, REQUIRED_PERMISSIONS);
  }

  canActivate(context: ExecutionContext): boolean {
    if (this.isPublic.get(context)) return true;

    const request = context.switchToHttp().getRequest<Request>();
    const principal = request.principal;
    if (!principal) throw unauthorized('missing_credentials', 'A credential is required.');

    const required = this.required.get(context);
    if (!required) throw forbidden('forbidden', 'This route declares no permission and is closed.');

    const missing = missingPermissions(principal.permissions, required);
    if (missing.length) {
      if (principal.apiKeyId) {
        this.audit.recordDenial({
          organizationId: principal.organizationId,
          keyId: principal.apiKeyId,
          reason: 'forbidden',
          actor: { type: 'api_key', id: principal.apiKeyId },
          origin: originOf(request),
          details: {
            missing_permissions: missing,
            route: `${request.method} ${request.route?.path ?? request.path}`,
          },
        });
      }
      throw forbidden('forbidden', `The credential lacks the permission ${missing.join(', ')}.`);
    }
    return true;
  }
}
