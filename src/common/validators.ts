import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsString,
  Matches,
  MaxLength,
  MinLength,
  ValidateBy,
  ValidateIf,
  ValidateNested,
} from 'class-validator';

/** A role's name: a built-in role or a custom role's `role_name`. */
export const ROLE_NAME_PATTERN = /^[a-z][a-z0-9_]{1,49}$/;

/**
 * An optional field that cannot be null: absent means "leave it as it is", `null` is refused with a
 * 400 instead of reaching a NOT NULL column. (class-validator's `@IsOptional()` lets null through;
 * keep that for the fields whose null has a meaning, such as `expiration: null` for "never".)
 */
export const Omittable = (): PropertyDecorator =>
  applyDecorators(
    ValidateIf((_object, value) => value !== undefined),
    ValidateBy({
      name: 'notNull',
      validator: {
        validate: (value: unknown) => value !== null,
        defaultMessage: (args) => `${args?.property} cannot be null`,
      },
    }),
  );

/** A name must show something: not empty and not only whitespace. */
export const IsNotBlank = (): PropertyDecorator =>
  ValidateBy({
    name: 'isNotBlank',
    validator: {
      validate: (value: unknown) => typeof value !== 'string' || /\S/u.test(value),
      defaultMessage: (args) => `${args?.property} must not be blank`,
    },
  });

/**
 * A field that holds one object of the given class, validated through. class-validator's
 * `@ValidateNested()` also walks arrays (it validates each element), so on its own `[]` passed as an
 * object with nothing in it; here an array, a string, a number or a boolean is refused, naming the
 * field. Combine with `@IsOptional()` where the object may be absent or null.
 */
export const NestedObject = (type: () => new () => object): PropertyDecorator =>
  applyDecorators(
    ValidateBy({
      name: 'isNestedObject',
      validator: {
        validate: (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value),
        defaultMessage: (args) => `${args?.property} must be an object`,
      },
    }),
    ValidateNested(),
    Type(type),
  );

/**
 * A display name (of a key, user, team, agent or organization): 1 to 100 characters, not blank.
 * `optional` makes it a PATCH field: absent leaves the name as it is, null is refused.
 */
export const DisplayNameField = (options: { example?: string; optional?: boolean } = {}): PropertyDecorator =>
  applyDecorators(
    ...(options.optional
      ? [ApiPropertyOptional({ minLength: 1, maxLength: 100, example: options.example }), Omittable()]
      : [ApiProperty({ minLength: 1, maxLength: 100, example: options.example })]),
    IsString(),
    MinLength(1),
    IsNotBlank(),
    MaxLength(100),
  );

/**
 * The role a key or user is given: a built-in role or a custom `role_name` (whether it exists is the
 * service's check). `optional` makes it a PATCH field, as for DisplayNameField.
 */
export const RoleNameField = (options: { optional?: boolean } = {}): PropertyDecorator =>
  applyDecorators(
    ...(options.optional
      ? [ApiPropertyOptional({ example: 'viewer' }), Omittable()]
      : [ApiProperty({ example: 'developer', description: 'A built-in role or a custom role_name.' })]),
    IsString(),
    Matches(ROLE_NAME_PATTERN, { message: 'role must be a lowercase role name' }),
  );
