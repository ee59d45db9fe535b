import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, ValidateBy } from 'class-validator';
import { GRANULARITIES, type Granularity, MAX_BUCKETS, parseTimestamp } from '../usage-range';

const IsTimestamp = (): PropertyDecorator =>
  ValidateBy({
    name: 'isTimestamp',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && parseTimestamp(value) !== undefined,
      defaultMessage: (args) =>
        `${args?.property} must be an ISO 8601 timestamp such as 2025-01-31T13:00:00Z (UTC without an offset)`,
    },
  });

export class UsageRangeQueryDto {
  @ApiPropertyOptional({
    format: 'date-time',
    description: `ISO 8601, rounded down to the bucket. Default: 23 buckets before \`to\`. At most ${MAX_BUCKETS} buckets.`,
    example: '2025-01-30T14:00:00Z',
  })
  @IsOptional()
  @IsTimestamp()
  from?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    description:
      'ISO 8601, rounded down to the bucket: the start of the last bucket. Default: the current one.',
    example: '2025-01-31T13:00:00Z',
  })
  @IsOptional()
  @IsTimestamp()
  to?: string;
}

export class KeyUsageQueryDto extends UsageRangeQueryDto {
  @ApiPropertyOptional({ enum: GRANULARITIES, default: 'hour', description: 'UTC hours or UTC days.' })
  @IsOptional()
  @IsIn(GRANULARITIES, { message: `granularity must be one of ${GRANULARITIES.join(', ')}` })
  granularity?: Granularity;
}

/** What GET /v1/usage lists: keys (the default), the identities behind them, or OAuth clients. */
export const USAGE_GROUPINGS = ['key', 'identity', 'client'] as const;
export type UsageGrouping = (typeof USAGE_GROUPINGS)[number];

export class OrganizationUsageQueryDto extends UsageRangeQueryDto {
  @ApiPropertyOptional({
    enum: USAGE_GROUPINGS,
    default: 'key',
    description:
      '`key`: the keys used in the range. `identity`: the identities whose keys were used under them ' +
      '(usage of keys without an identity is left out); needs `identities:read` as well. `client`: the ' +
      "OAuth clients whose access tokens were used, summed over their users' grants (live grants).",
  })
  @IsOptional()
  @IsIn(USAGE_GROUPINGS, { message: `group_by must be one of ${USAGE_GROUPINGS.join(', ')}` })
  group_by?: UsageGrouping;
}

export class UsageBucketResponse {
  @ApiProperty({ format: 'date-time', description: 'The start of the UTC hour or day.' }) start: string;
  @ApiProperty({ type: 'integer', description: 'allowed + denied' }) requests: number;
  @ApiProperty({ type: 'integer' }) allowed: number;
  @ApiProperty({ type: 'integer' }) denied: number;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'integer' },
    description: "Refused requests by the refusal's code; {} when none.",
    example: { rate_limited: 3, ip_not_allowed: 1 },
  })
  denied_by_reason: Record<string, number>;
  @ApiProperty({
    type: 'integer',
    description: "The key's tasks (an identity's: its keys' tasks) that ended in the bucket.",
  })
  tasks: number;
  @ApiProperty({ type: 'integer', description: 'Input tokens those tasks reported.' }) input_tokens: number;
  @ApiProperty({ type: 'integer', description: 'Output tokens those tasks reported.' }) output_tokens: number;
  @ApiProperty({
    type: 'integer',
    description:
      'Credits spent by the key (an identity: by its keys): one per request that spent one, and what its runs cost.',
  })
  credits_spent: number;
}

export class KeyUsageResponse {
  @ApiProperty({ example: 'key_2Nq…' }) key_id: string;
  @ApiProperty({ enum: GRANULARITIES }) granularity: Granularity;
  @ApiProperty({ format: 'date-time', description: 'The start of the first bucket.' }) from: string;
  @ApiProperty({ format: 'date-time', description: 'The start of the last bucket.' }) to: string;
  @ApiProperty({ type: [UsageBucketResponse], description: 'Every bucket of the range, oldest first.' })
  data: UsageBucketResponse[];
}

export class IdentityUsageResponse {
  @ApiProperty({ example: 'idt_2Nq…' }) identity_id: string;
  @ApiProperty({ enum: GRANULARITIES }) granularity: Granularity;
  @ApiProperty({ format: 'date-time', description: 'The start of the first bucket.' }) from: string;
  @ApiProperty({ format: 'date-time', description: 'The start of the last bucket.' }) to: string;
  @ApiProperty({
    type: [UsageBucketResponse],
    description:
      "Every bucket of the range, oldest first: the sums of the identity's keys, each for the time it belonged to the identity.",
  })
  data: UsageBucketResponse[];
}

export class KeyUsageTotalResponse {
  @ApiProperty({ example: 'key_2Nq…' }) key_id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: 'integer' }) requests: number;
  @ApiProperty({ type: 'integer' }) allowed: number;
  @ApiProperty({ type: 'integer' }) denied: number;
  @ApiProperty({ type: 'integer', description: "Credits taken from the key's balance (requests and runs)." })
  credits_spent: number;
}

export class OrganizationUsageResponse {
  @ApiProperty({ format: 'date-time', description: 'The start of the first hour.' }) from: string;
  @ApiProperty({ format: 'date-time', description: 'The start of the last hour.' }) to: string;
  @ApiProperty({
    type: [KeyUsageTotalResponse],
    description: 'The keys used in the range, most requests first (then by key_id).',
  })
  data: KeyUsageTotalResponse[];
}

export class IdentityUsageTotalResponse {
  @ApiProperty({ example: 'idt_2Nq…' }) identity_id: string;
  @ApiProperty({ example: 'cus_1042', description: "The identity's external_id as it is now." })
  external_id: string;
  @ApiProperty({ type: 'integer' }) requests: number;
  @ApiProperty({ type: 'integer' }) allowed: number;
  @ApiProperty({ type: 'integer' }) denied: number;
  @ApiProperty({ type: 'integer', description: "Credits spent by the identity's keys (requests and runs)." })
  credits_spent: number;
}

export class OrganizationIdentityUsageResponse {
  @ApiProperty({ format: 'date-time', description: 'The start of the first hour.' }) from: string;
  @ApiProperty({ format: 'date-time', description: 'The start of the last hour.' }) to: string;
  @ApiProperty({
    type: [IdentityUsageTotalResponse],
    description:
      'The identities whose keys were used under them in the range, most requests first (then by identity_id).',
  })
  data: IdentityUsageTotalResponse[];
}

export class OrganizationUsageSeriesResponse {
  @ApiProperty({ enum: GRANULARITIES }) granularity: Granularity;
  @ApiProperty({ format: 'date-time', description: 'The start of the first bucket.' }) from: string;
  @ApiProperty({ format: 'date-time', description: 'The start of the last bucket.' }) to: string;
  @ApiProperty({
    type: [UsageBucketResponse],
    description:
      "Every bucket of the range, oldest first: the sums of all the organization's keys, including keys deleted since.",
  })
  data: UsageBucketResponse[];
}

export class GrantUsageResponse {
  @ApiProperty({ example: 'grant_5JkQm2Tz8RpVw3Xy7NbLc4' }) grant_id: string;
  @ApiProperty() client_id: string;
  @ApiProperty({ type: String, nullable: true }) client_name: string | null;
  @ApiProperty({ enum: GRANULARITIES }) granularity: Granularity;
  @ApiProperty({ format: 'date-time', description: 'The start of the first bucket.' }) from: string;
  @ApiProperty({ format: 'date-time', description: 'The start of the last bucket.' }) to: string;
  @ApiProperty({
    type: [UsageBucketResponse],
    description:
      "Every bucket of the range, oldest first: the requests made with the grant's OAuth access tokens (no tasks or credits: a token spends none).",
  })
  data: UsageBucketResponse[];
}

export class ClientUsageTotalResponse {
  @ApiProperty() client_id: string;
  @ApiProperty({ type: String, nullable: true, description: 'As its newest grant names it.' })
  client_name: string | null;
  @ApiProperty({ type: 'integer' }) requests: number;
  @ApiProperty({ type: 'integer' }) allowed: number;
  @ApiProperty({ type: 'integer' }) denied: number;
  @ApiProperty({ type: 'integer', description: 'Always 0 today: OAuth access tokens spend no credits.' })
  credits_spent: number;
}

export class OrganizationClientUsageResponse {
  @ApiProperty({ format: 'date-time', description: 'The start of the first hour.' }) from: string;
  @ApiProperty({ format: 'date-time', description: 'The start of the last hour.' }) to: string;
  @ApiProperty({
    type: [ClientUsageTotalResponse],
    description:
      "The OAuth clients whose grants' tokens were used in the range, most requests first (then by client_id).",
  })
  data: ClientUsageTotalResponse[];
}
