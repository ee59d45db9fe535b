import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsISO8601,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  ValidateBy,
} from 'class-validator';
import {
  DescriptionField,
  Omittable,
  NestedObject,
  DisplayNameField,
  IntegerField,
  NoControlCharacters,
  RoleNameField,
} from '../../common/validators';
import { ListQueryDto } from '../../common/pagination';
import { KEY_STATUSES, KEY_TYPES, KeyStatus, KeyType } from '../api-key.entity';
import { CreditsDto, IsMetaObject, RateLimitDto } from '../../common/usage-controls.dto';
import { isIpRule } from '../../restrictions/ip-rules';
import { isReferrerRule } from '../../restrictions/referrer-rules';

/** As long as a key's name: a longer search matches nothing. */
export const SEARCH_MAX_LENGTH = 100;

/**
 * The refused entries of a list, quoted, so a person can find them ("10.0.0.300", "x"); at most three,
 * each cut to 60 characters (the problem stays small whatever was sent).
 */
function namedEntries(value: unknown, accepted: (entry: unknown) => boolean): string {
  if (!Array.isArray(value)) return '';
  const refused = value.filter((entry) => !accepted(entry));
  const quoted = refused
    .slice(0, 3)
    .map((entry) => (typeof entry === 'string' ? JSON.stringify(entry.slice(0, 60)) : 'a non-text entry'));
  if (!quoted.length) return '';
  const more = refused.length > 3 ? ` and ${refused.length - 3} more` : '';
  return ` (refused: ${quoted.join(', ')}${more})`;
}

const isIpEntry = (entry: unknown): boolean => typeof entry === 'string' && isIpRule(entry);
const isReferrerEntry = (entry: unknown): boolean =>
  typeof entry === 'string' && entry.length <= 500 && isReferrerRule(entry);

const EachIpOrCidr = (): PropertyDecorator =>
  ValidateBy({
    name: 'eachIpOrCidr',
    validator: {
      validate: (value: unknown) => Array.isArray(value) && value.every(isIpEntry),
      defaultMessage: (args) =>
        `each allowed_ips entry must be an IPv4/IPv6 address or CIDR range${namedEntries(args?.value, isIpEntry)}`,
    },
  });

const EachReferrerPattern = (): PropertyDecorator =>
  ValidateBy({
    name: 'eachReferrerPattern',
    validator: {
      validate: (value: unknown) => Array.isArray(value) && value.every(isReferrerEntry),
      defaultMessage: (args) =>
        'each allowed_referrers entry must be an http(s) URL of at most 500 characters, optionally ending in /*' +
        namedEntries(args?.value, isReferrerEntry),
    },
  });

const InTheFuture = (): PropertyDecorator =>
  ValidateBy({
    name: 'inTheFuture',
    validator: {
      validate: (value: unknown) => typeof value !== 'string' || Date.parse(value) > Date.now(),
      defaultMessage: () => 'expiration must be in the future',
    },
  });

export class RotationPolicyDto {
  @ApiProperty()
  @IsBoolean()
  enabled: boolean;

  // rotation_days and rotation_grace_seconds are integer columns, far above these bounds.
  @IntegerField({ minimum: 1, maximum: 3650, description: 'Days between automatic rotations.' })
  days: number;

  // No `default`: the class also serves PATCH bodies, whose schemas carry none (see enabled below).
  @IntegerField({
    minimum: 0,
    maximum: 604800,
    optional: 'omittable',
    description: 'Grace period of automatic rotations; omitted: 0.',
  })
  grace_period_seconds?: number;
}

/** Fields shared by create and update; `type` is fixed at creation. */
class ApiKeySettingsDto {
  @DescriptionField()
  description?: string | null;

  @ApiPropertyOptional({
    example: 'team_7hKp2Wq9ZtR4mNx8Ys3Lb6',
    description: 'Required for team keys: the team the key acts for.',
  })
  @Omittable()
  @IsString()
  @Matches(/^team_[0-9A-Za-z]{22}$/, { message: 'team_id must be a team id (team_…)' })
  team_id?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    nullable: true,
    description: 'ISO 8601; omitted or null: never expires.',
  })
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true }, { message: 'expiration must be an ISO 8601 timestamp' })
  @InTheFuture()
  expiration?: string | null;

  @ApiPropertyOptional({ type: RotationPolicyDto, nullable: true })
  @IsOptional()
  @NestedObject(() => RotationPolicyDto)
  rotation_policy?: RotationPolicyDto | null;

  @ApiPropertyOptional({ type: [String], example: ['https://app.example.com/*'] })
  @Omittable()
  @IsArray()
  @ArrayMaxSize(50)
  @EachReferrerPattern()
  allowed_referrers?: string[];

  @ApiPropertyOptional({ type: [String], example: ['203.0.113.7', '2001:db8::/32'] })
  @Omittable()
  @IsArray()
  @ArrayMaxSize(100)
  @EachIpOrCidr()
  allowed_ips?: string[];

  @ApiPropertyOptional({ type: RateLimitDto, nullable: true })
  @IsOptional()
  @NestedObject(() => RateLimitDto)
  rate_limit?: RateLimitDto | null;

  @ApiPropertyOptional({ description: 'When true the key is never passed on to agents, webhooks or logs.' })
  @Omittable()
  @IsBoolean()
  hide_credentials?: boolean;

  // No `default` here: these settings are also the PATCH body, where an omitted field is left as it
  // is, and a typed client that fills in defaults would re-enable a disabled key. Create documents it.
  @ApiPropertyOptional({
    description: 'The kill switch: a disabled key is refused (401 key_disabled) until enabled again.',
  })
  @Omittable()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    example: { plan: 'pro', customer_id: 'cus_123' },
    description:
      'Your own data (plan, customer id), at most 4 KiB as JSON text; never a secret. PATCH replaces it whole; null clears it.',
  })
  @IsOptional()
  @IsMetaObject()
  meta?: Record<string, unknown> | null;

  @ApiPropertyOptional({
    type: CreditsDto,
    nullable: true,
    description: 'A budget of requests, optionally refilled; omitted or null: unlimited.',
  })
  @IsOptional()
  @NestedObject(() => CreditsDto)
  credits?: CreditsDto | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: 'idt_7hKp2Wq9ZtR4mNx8Ys3Lb6',
    description: "The identity (customer) the key belongs to, of the key's organization; null detaches it.",
  })
  @IsOptional()
  @IsString()
  @MaxLength(40)
  identity_id?: string | null;
}

export class CreateApiKeyDto extends ApiKeySettingsDto {
  @DisplayNameField({ example: 'CI deploys' })
  name: string;

  @RoleNameField()
  role: string;

  @ApiPropertyOptional({ enum: KEY_TYPES, default: 'personal' })
  @Omittable()
  @IsIn(KEY_TYPES)
  type?: KeyType;

  /** Validated as a setting; only its documentation differs: a new key is enabled unless it says not. */
  @ApiPropertyOptional({ default: true })
  declare enabled?: boolean;
}

export class UpdateApiKeyDto extends ApiKeySettingsDto {
  @DisplayNameField({ optional: true })
  name?: string;

  @RoleNameField({ optional: true })
  role?: string;
}

export class RotateApiKeyDto {
  @IntegerField({
    minimum: 0,
    maximum: 604800,
    optional: 'omittable',
    default: 0,
    description: 'How long the old value keeps working.',
  })
  grace_period_seconds?: number;
}

export class ListApiKeysQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: KEY_TYPES })
  @IsOptional()
  @IsIn(KEY_TYPES)
  type?: KeyType;

  @ApiPropertyOptional({ enum: KEY_STATUSES })
  @IsOptional()
  @IsIn(KEY_STATUSES)
  status?: KeyStatus;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(40)
  owner_id?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(40)
  team_id?: string;

  @ApiPropertyOptional({
    maxLength: 40,
    example: 'idt_7hKp2Wq9ZtR4mNx8Ys3Lb6',
    description: 'Only the keys that belong to this identity (an unknown id lists none).',
  })
  @IsOptional()
  @IsString()
  @MaxLength(40)
  identity_id?: string;

  @ApiPropertyOptional({
    description:
      "true: only the keys (not revoked) whose expiration the organization's policy would refuse if it " +
      'were set now (none, or further out than max_key_lifetime_days); false: only the others.',
  })
  @IsOptional()
  @Transform(({ value }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean()
  violates_policy?: boolean;

  @ApiPropertyOptional({
    maxLength: SEARCH_MAX_LENGTH,
    example: 'billing',
    description:
      'Keys whose name contains this text, or whose `start` begins with it, ignoring case. Surrounding spaces are ignored; empty: no filter. Combines with the other filters and the cursor.',
  })
  @IsOptional()
  @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value))
  @IsString({ message: 'search must be one text value' })
  @MaxLength(SEARCH_MAX_LENGTH, { message: `search must be at most ${SEARCH_MAX_LENGTH} characters` })
  // PostgreSQL text cannot hold NUL, and no name holds a control character a person would type.
  @NoControlCharacters()
  search?: string;
}
