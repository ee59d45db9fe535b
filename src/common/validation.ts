import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { CommonError, CommonErrorCode } from './common.errors';
import type { FieldError } from './domain-error';
import { PROBLEM_LIMITS } from './problem';

/**
 * The most field errors a validation problem lists (the problem filter sends no more). A body may
 * hold up to 1,000 unknown properties (json-text.ts), each one error; past the first few they tell a
 * client nothing more.
 */
const MAX_FIELD_ERRORS = PROBLEM_LIMITS.errors;

/**
 * The query parameter that carries a credential (`?api_key=`, when ALLOW_QUERY_API_KEY is on). It
 * belongs to the key check, not to any route's query, so no query DTO declares it.
 */
export const API_KEY_QUERY_PARAMETER = 'api_key';

/** Walks class-validator's tree depth first as `{field: "rate_limit.requests_per_minute", message}` pairs. */
function* fieldErrors(errors: ValidationError[], parent = ''): Generator<FieldError> {
  for (const error of errors) {
    const field = parent ? `${parent}.${error.property}` : error.property;
    for (const message of Object.values(error.constraints ?? {})) {
      // class-validator writes "property foo should not exist"; name the full path instead.
      yield {
        field,
        message: message.replace(/^property \S+ should not exist$/, `${field} is not allowed`),
      };
    }
    if (error.children?.length) yield* fieldErrors(error.children, field);
  }
}

/**
 * The first MAX_FIELD_ERRORS field errors of class-validator's tree, and how many there were in all
 * (counted without building the rest).
 */
export function flattenValidationErrors(errors: ValidationError[]): { listed: FieldError[]; total: number } {
  const listed: FieldError[] = [];
  let total = 0;
  for (const error of fieldErrors(errors)) {
    if (++total <= MAX_FIELD_ERRORS) listed.push(error);
  }
  return { listed, total };
}

/** A check that holds only for bodies class-validator would pass unchanged (see acceptsWithoutValidation). */
export type QuickBodyCheck = (value: unknown) => boolean;

const quickBodyChecks = new WeakMap<object, QuickBodyCheck>();

/**
 * Lets the global pipe take a body of `dto` without class-validator when `check` holds. For a route
 * called thousands of times a second (POST /v1/keys/verify): class-validator looks up a class's rules by
 * walking the rules of every class it knows (`getTargetValidationMetadatas`) on each call, and with the
 * transform it was most of what validating that body cost.
 *
 * `check` must hold only for values the pipe would accept and leave as they are: a plain object with
 * none but the DTO's properties, each of the type and within the bounds its decorators ask, none needing
 * a conversion. Anything else (an error to report, a value to convert) goes through class-validator as
 * before, so errors are the same. The body is then an instance of `dto` with its properties, as
 * class-transformer makes it from such a value. The DTO's spec checks the check against class-validator
 * over random bodies.
 */
export function acceptsWithoutValidation(dto: new () => object, check: QuickBodyCheck): void {
  quickBodyChecks.set(dto, check);
}

/** A JSON object as body-parser makes it: not an array, not null, Object's own prototype. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/**
 * The global pipe: strip nothing silently, refuse unknown fields, convert query strings to numbers.
 * The credential's query parameter is set aside before a route's query is validated, so `?api_key=`
 * works on every route, whichever query DTO it declares.
 */
class GatehouseValidationPipe extends ValidationPipe {
  override transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const dto = metadata.metatype as (new () => object) | undefined;
    if (metadata.type === 'body' && dto && quickBodyChecks.get(dto)?.(value)) {
      return Promise.resolve(Object.assign(new dto(), value));
    }
    if (metadata.type === 'query' && metadata.data === undefined && value && typeof value === 'object') {
      const { [API_KEY_QUERY_PARAMETER]: _credential, ...query } = value as Record<string, unknown>;
      return super.transform(query, metadata);
    }
    return super.transform(value, metadata);
  }
}

export function createValidationPipe(): ValidationPipe {
  return new GatehouseValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => {
      const { listed, total } = flattenValidationErrors(errors);
      const more = total > listed.length ? `; and ${total - listed.length} more` : '';
      return new CommonError(
        CommonErrorCode.ValidationFailed,
        listed.length ? `${listed.map((e) => e.message).join('; ')}${more}` : 'The request is invalid.',
        { errors: listed },
      );
    },
  });
}
