import { ValidationError, ValidationPipe } from '@nestjs/common';
import { CommonError, CommonErrorCode } from './common.errors';
import type { FieldError } from './domain-error';

/** Flattens class-validator's tree into `{field: "rate_limit.requests_per_minute", message}` pairs. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const error of errors) {
    const field = parent ? `${parent}.${error.property}` : error.property;
    for (const message of Object.values(error.constraints ?? {})) {
      // class-validator writes "property foo should not exist"; name the full path instead.
      out.push({
        field,
        message: message.replace(/^property \S+ should not exist$/, `${field} is not allowed`),
      });
    }
    if (error.children?.length) out.push(...flattenValidationErrors(error.children, field));
  }
  return out;
}

/** The global pipe: strip nothing silently, refuse unknown fields, convert query strings to numbers. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => {
      const fieldErrors = flattenValidationErrors(errors);
      return new CommonError(
        CommonErrorCode.ValidationFailed,
        fieldErrors.map((e) => e.message).join('; ') || 'The request is invalid.',
        { errors: fieldErrors },
      );
    },
  });
}
