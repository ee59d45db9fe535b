import { applyDecorators, SetMetadata, type Type } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiCreatedResponse,
  ApiExtension,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
} from '@nestjs/swagger';
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
