import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, type ApiPropertyOptions } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
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
 * Characters that change how a terminal, a log viewer, a spreadsheet or a bidirectional text renderer
 * shows what follows, and that nobody types into a name: C0 controls (ANSI escapes start with ESC,
 * U+001B; NUL cannot be stored in PostgreSQL text), DEL, C1 controls (U+009B is a one-character CSI
 * on some terminals), the line and paragraph separators (line breaks to JavaScript and to some log
 * viewers), and the bidirectional embeddings, overrides and isolates that let a name display as other
 * text than it holds (CVE-2021-42574, "Trojan Source"). Joiners and marks that scripts and emoji
 * need (U+200C, U+200D, U+200E, U+200F) stay allowed.
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** True when `value` holds a character of CONTROL_CHARACTERS. */
export const hasControlCharacters = (value: string): boolean => CONTROL_CHARACTERS.test(value);

/** CONTROL_CHARACTERS but the tab, line feed and carriage return a multi-line text is written with. */
const CONTROL_CHARACTERS_BUT_LINE_BREAKS =
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/**
 * A text a person names something with, shown back in logs, the dashboard and CSV exports: no control
 * character (CONTROL_CHARACTERS), so what is stored shows as what it is. Refused with 400 naming the
 * field; values that are not strings are left to the field's type check.
 */
export const NoControlCharacters = (options: { lineBreaks?: boolean } = {}): PropertyDecorator => {
  const refused = options.lineBreaks ? CONTROL_CHARACTERS_BUT_LINE_BREAKS : CONTROL_CHARACTERS;
  return ValidateBy({
    name: 'noControlCharacters',
    validator: {
      validate: (value: unknown) => typeof value !== 'string' || !refused.test(value),
      defaultMessage: (args) =>
        `${args?.property ?? 'the value'} must not contain control characters` +
        (options.lineBreaks ? ' (line breaks and tabs excepted)' : ''),
    },
  });
};

/**
 * The largest value of PostgreSQL's `integer` (int4). A request integer kept in such a column is
 * bounded at or below it, so a larger one is a 400 naming the field instead of an overflow the
 * database answers (a 500) after the request was accepted.
 */
export const INT4_MAX = 2_147_483_647;

/**
 * An integer field of a request, its bounds stated once for both the validation (400 naming the
 * field) and the OpenAPI document (`type: integer`, `minimum`, `maximum`): the swagger plugin reads
 * `@Min`/`@Max` but documents `@IsInt()` fields as `number`, and bounds written twice drift apart.
 * The maximum must fit the column the value is stored in (INT4_MAX for `integer`).
 *
 * `optional`: `'omittable'` for a field that may be absent but not null (see Omittable), `'nullable'`
 * for one whose null means something (documented as such). `fromQuery` converts a query string's text
 * to a number first.
 */
export const IntegerField = ({
  minimum,
  maximum,
  optional,
  fromQuery,
  ...documentation
}: Omit<ApiPropertyOptions, 'type' | 'minimum' | 'maximum' | 'required' | 'nullable'> & {
  minimum: number;
  maximum: number;
  optional?: 'omittable' | 'nullable';
  fromQuery?: boolean;
}): PropertyDecorator => {
  if (!Number.isSafeInteger(minimum) || !Number.isSafeInteger(maximum) || minimum > maximum) {
    throw new Error(`IntegerField: bounds ${minimum}..${maximum} are not safe integers in order`);
  }
  const schema = { ...documentation, type: 'integer', minimum, maximum } as ApiPropertyOptions;
  return applyDecorators(
    ...(optional === undefined
      ? [ApiProperty(schema)]
      : optional === 'omittable'
        ? [ApiPropertyOptional(schema), Omittable()]
        : [ApiPropertyOptional({ ...schema, nullable: true } as ApiPropertyOptions), IsOptional()]),
    ...(fromQuery ? [Type(() => Number)] : []),
    IsInt(),
    Min(minimum),
    Max(maximum),
  );
};

/**
 * A display name (of a key, user, team, agent or organization): 1 to 100 characters, not blank, no
 * control characters. `optional` makes it a PATCH field: absent leaves the name as it is, null is
 * refused.
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
    NoControlCharacters(),
  );

/**
 * A description (of a key, an agent, a webhook…): optional, nullable, at most 500 characters, shown in
 * the dashboard and its exports. Several lines are fine; other control characters are refused as in a
 * name (NoControlCharacters).
 */
export const DescriptionField = (): PropertyDecorator =>
  applyDecorators(
    // `type` said, not inferred: in a file the Swagger plugin does not read (an extension's), `string | null`
    // reflects as Object, and the document would call the field an object.
    ApiPropertyOptional({ type: String, maxLength: 500, nullable: true }),
    IsOptional(),
    IsString(),
    MaxLength(500),
    NoControlCharacters({ lineBreaks: true }),
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
