import { applyDecorators, SetMetadata, type Type } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiCreatedResponse,
  ApiExtension,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiSecurity,
} from '@nestjs/swagger';
import { ApiProblems, PUBLIC_OPERATION } from '../common/openapi';
import type { Permission } from '../roles/permissions';

/** Route metadata the access layer reads. Controllers declare one of the two on every route. */
export const IS_PUBLIC = 'gatehouse:public';
export const REQUIRED_PERMISSIONS = 'gatehouse:required-permissions';
export const QUERY_PERMISSIONS = 'gatehouse:query-permissions';

/**
 * Opts a route out of credential checks. Everything else is denied without a credential. In the
 * OpenAPI document the operation needs no security (see finishOpenApiDocument).
 */
export const Public = (): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(IS_PUBLIC, true), ApiExtension(PUBLIC_OPERATION, true));

export const TASK_TOKEN_ACCESS = 'gatehouse:task-token-access';
/** The OpenAPI security scheme of task tokens. */
export const TASK_TOKEN_SCHEME = 'taskToken';
/** The OpenAPI security scheme of OAuth access tokens (src/oauth/). */
export const OAUTH_SCHEME = 'oauth2';

/**
 * What a task token may do on a route (CONTRACT, "Agent runs"); on a route without one, nothing.
 * - `own_task`: the route's `:id` is the token's task;
 * - `own_task_only`: the same, and only a task token may call it (an agent's own reports);
 * - `task_file`: the route's `:id` is one of the task's attachments or output files;
 * - `output_upload`: a new file, which becomes one of the task's output files.
 */
export type TaskTokenAccessKind = 'own_task' | 'own_task_only' | 'task_file' | 'output_upload';

/**
 * Lets a task token use a route, within the limits its kind sets (the permission step checks them, and
 * the route's permission still applies: the token has no more than the task's creator). In the OpenAPI
 * document the route accepts the task token scheme as well as, unless `own_task_only`, the usual four.
 */
export const TaskTokenAccess = (kind: TaskTokenAccessKind): MethodDecorator =>
  applyDecorators(
    SetMetadata(TASK_TOKEN_ACCESS, kind),
    ...(kind === 'own_task_only'
      ? []
      : [ApiSecurity('bearer'), ApiSecurity('X-API-Key'), ApiSecurity('api_key'), ApiSecurity(OAUTH_SCHEME)]),
    ApiSecurity(TASK_TOKEN_SCHEME),
  );

/** What any route behind the key check can answer, whatever it does: documented once, here. */
const KEY_CHECK_PROBLEMS = [401, 403, 429, 503];

/**
 * Declares what a route needs. The permission step refuses any non-public route that has no
 * declaration, so a forgotten decorator fails closed. `@RequirePermissions()` with no argument means
 * "any valid credential".
 */
export const RequirePermissions = (...permissions: Permission[]): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(REQUIRED_PERMISSIONS, permissions), ApiProblems(...KEY_CHECK_PROBLEMS));

/** What a route requires beyond its own permissions when a query parameter asks for more. */
export interface QueryPermissions {
  parameter: string;
  /** By value of the parameter: the permissions that value needs as well. */
  byValue: Readonly<Record<string, readonly Permission[]>>;
}

/**
 * Permissions a route requires as well when a query parameter has one of the given values, beside its
 * `@RequirePermissions`: `@RequirePermissionsForQuery('group_by', { identity: ['identities:read'] })`
 * on a route whose answer shows more for that value. The permission step checks them with the
 * route's own, so a refusal is the same 403 `forbidden`, counted and audited as one; a value the route
 * does not take is left to its validation (400).
 */
export const RequirePermissionsForQuery = (
  parameter: string,
  byValue: Record<string, Permission[]>,
): MethodDecorator => SetMetadata(QUERY_PERMISSIONS, { parameter, byValue } satisfies QueryPermissions);

/** The permissions a request's query adds under `@RequirePermissionsForQuery` (none when it adds none). */
export function permissionsForQuery(
  declared: QueryPermissions,
  query: Readonly<Record<string, unknown>> | undefined,
): readonly Permission[] {
  const value = query?.[declared.parameter];
  // Own properties only: `?group_by=constructor` is a value like any other, not Object's.
  return typeof value === 'string' && Object.hasOwn(declared.byValue, value) ? declared.byValue[value] : [];
}

export const BODY_PERMISSIONS = 'gatehouse:body-permissions';

/** The permissions a request's parsed body needs beyond the route's own (none: an empty list). */
export type BodyPermissions = (body: unknown) => readonly Permission[];

/**
 * Permissions a route requires as well, decided by what its body asks for: a route that stands for
 * several operations in one (POST /mcp: each `tools/call` needs its tool's permission) declares which
 * in one function, and the permission step checks them with the route's own before the handler runs, so
 * a refusal is the same 403 `forbidden`, counted and audited as any. The body is parsed, not validated:
 * the function reads it defensively, and what it cannot place adds nothing (the handler refuses it).
 */
export const RequirePermissionsForBody = (permissionsOf: BodyPermissions): MethodDecorator =>
  SetMetadata(BODY_PERMISSIONS, permissionsOf);

/** How a route answers when it succeeds: a type for 200, or `Created(type)`, `Accepted(type)`, `NoContent`. */
export type RouteAnswer = Type<unknown> | { status: 201 | 202; type: Type<unknown> } | typeof NoContent;
export const Created = (type: Type<unknown>) => ({ status: 201 as const, type });
export const Accepted = (type: Type<unknown>) => ({ status: 202 as const, type });
export const NoContent = { status: 204 as const };
/** `@Operation(ANY_CREDENTIAL, …)`: any valid credential, as `@RequirePermissions()`. */
export const ANY_CREDENTIAL = null;

/**
 * A protected route's access and its documentation, declared together: the permission it requires
 * (RequirePermissions, which also documents 401, 403, 429 and 503), a summary, its success answer and the
 * other problems it can answer:
 * `@Operation('webhooks:read', 'Get an endpoint', WebhookResponse, 404)`.
 * The status code itself stays with `@HttpCode`, beside the route's method decorator. A route whose
 * documentation needs more (a description, headers, a schema) uses the underlying decorators. Notes on
 * the method go in `//` comments: the Swagger plugin (introspectComments) makes a JSDoc comment the
 * operation's summary, and it would replace this one.
 */
export function Operation(
  permission: Permission | typeof ANY_CREDENTIAL,
  summary: string,
  answer: RouteAnswer,
  ...problems: number[]
): MethodDecorator {
  // Applied in this order, as the four written one above the other (bottom first) would be: the
  // document lists the responses in the same order.
  return applyDecorators(
    ApiProblems(...problems),
    answerDecorator(answer),
    ApiOperation({ summary }),
    permission === ANY_CREDENTIAL ? RequirePermissions() : RequirePermissions(permission),
  );
}

function answerDecorator(answer: RouteAnswer): MethodDecorator & ClassDecorator {
  if (typeof answer === 'function') return ApiOkResponse({ type: answer });
  if (answer.status === 204) return ApiNoContentResponse();
  return answer.status === 201
    ? ApiCreatedResponse({ type: answer.type })
    : ApiAcceptedResponse({ type: answer.type });
}
