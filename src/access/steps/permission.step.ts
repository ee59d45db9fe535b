import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { satisfies } from '../../api-keys/verification/permission-query';
import { missingPermissions, Permission } from '../../roles/permissions';
import type { AccessAttempt, AccessStep, KeyVerification, StepOutcome } from '../access-attempt';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import { RouteMetadataCache } from '../route-metadata';
import {
  BODY_PERMISSIONS,
  BodyPermissions,
  permissionsForQuery,
  QUERY_PERMISSIONS,
  QueryPermissions,
  REQUIRED_PERMISSIONS,
  TASK_TOKEN_ACCESS,
  TaskTokenAccessKind,
} from '../route-access.decorators';
import type { Principal } from '../principal';
import { taskTokenRefusal } from '../task-token-scope';

/**
 * Step 3, permission: the route's `@RequirePermissions`, and what its `@RequirePermissionsForQuery` and
 * `@RequirePermissionsForBody` add for this request's query and body, against the principal's effective
 * permissions. A route without a declaration is refused, so forgetting one fails closed. A task token is also held to what the
 * route's `@TaskTokenAccess` allows it (task-token-scope.ts): without one, nothing. A verification
 * stands for another service's route: its permission query is that route's declaration (none: any key).
 */
@Injectable()
export class PermissionStep implements AccessStep {
  private readonly required: RouteMetadataCache<Permission[]>;
  private readonly taskTokenAccess: RouteMetadataCache<TaskTokenAccessKind>;
  private readonly queryPermissions: RouteMetadataCache<QueryPermissions>;
  private readonly bodyPermissions: RouteMetadataCache<BodyPermissions>;

  constructor(reflector: Reflector) {
    this.required = new RouteMetadataCache(reflector, REQUIRED_PERMISSIONS);
    this.taskTokenAccess = new RouteMetadataCache(reflector, TASK_TOKEN_ACCESS);
    this.queryPermissions = new RouteMetadataCache(reflector, QUERY_PERMISSIONS);
    this.bodyPermissions = new RouteMetadataCache(reflector, BODY_PERMISSIONS);
  }

  check({ context, request, verification }: AccessAttempt): StepOutcome {
    const principal = request.principal;
    if (!principal) return new AccessDenial(AccessDenialCode.MissingCredentials, 'A credential is required.');
    if (verification) return queryRefusal(verification, principal);
    const required = this.required.get(context);
    if (!required)
      return new AccessDenial(AccessDenialCode.Forbidden, 'This route declares no permission and is closed.');
    const taskAccess = this.taskTokenAccess.get(context);
    if (principal.task || taskAccess === 'own_task_only') {
      const refusal = taskTokenRefusal(taskAccess, principal, request);
      if (refusal) return refusal;
    }
    const byQuery = this.queryPermissions.get(context);
    const byBody = this.bodyPermissions.get(context);
    const missing = missingPermissions(
      principal.permissions,
      byQuery || byBody
        ? [
            ...required,
            ...(byQuery ? permissionsForQuery(byQuery, request.query) : []),
            ...(byBody ? byBody(request.body) : []),
          ]
        : required,
    );
    if (!missing.length) return undefined;
    return new AccessDenial(
      AccessDenialCode.Forbidden,
      `The credential lacks the permission ${missing.join(', ')}.`,
      {},
      { missing_permissions: missing, route: `${request.method} ${request.route?.path ?? request.path}` },
    );
  }
}

/** A verified key against the body's permission query (POST /v1/keys/verify). */
function queryRefusal({ permissions }: KeyVerification, principal: Principal): StepOutcome {
  if (!permissions || satisfies(permissions, principal.permissions)) return undefined;
  return new AccessDenial(AccessDenialCode.Forbidden, 'The key does not satisfy the permission query.');
}
