import { IdentitySummaryResponse } from '../../identities/dto/identity.dto';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsIP, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import type { Permission } from '../../roles/permissions';
import { MAX_QUERY_LENGTH } from '../verification/permission-query';

export const MAX_VERIFY_COST = 1000;
/** Far beyond any key value (sk_ + 49 characters); longer is answered 400, never hashed. */
const MAX_KEY_LENGTH = 200;
const MAX_REFERRER_LENGTH = 2000;

export class VerifyKeyDto {
  @ApiProperty({ maxLength: MAX_KEY_LENGTH, description: 'The key value your caller presented.' })
  @IsString()
  @MaxLength(MAX_KEY_LENGTH)
  key: string;

  @ApiPropertyOptional({
    maxLength: MAX_QUERY_LENGTH,
    example: 'agents:read AND (tasks:create OR tasks:execute)',
    description:
      'Permissions the key must hold: permission names combined with AND, OR (uppercase) and parentheses, ' +
      'AND binding tighter than OR. A malformed query or an unknown permission: 400 invalid_permission_query.',
  })
  // No @MaxLength: the parser refuses a longer query first thing, as invalid_permission_query like any
  // other bad query.
  @IsOptional()
  @IsString()
  permissions?: string;

  @ApiPropertyOptional({
    minimum: 0,
    maximum: MAX_VERIFY_COST,
    default: 1,
    description: "Credits a valid verify spends from the key's balance, all or none.",
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_VERIFY_COST)
  cost?: number;

  @ApiPropertyOptional({
    example: '203.0.113.7',
    description: "Your caller's address, checked against the key's allowed_ips.",
  })
  @IsOptional()
  @IsIP()
  ip?: string;

  @ApiPropertyOptional({
    maxLength: MAX_REFERRER_LENGTH,
    example: 'https://app.example.com/',
    description: "Your caller's Referer or Origin, checked against the key's allowed_referrers.",
  })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_REFERRER_LENGTH)
  referrer?: string;
}

export const VERIFY_KEY_CODES = [
  'valid',
  'malformed_key',
  'invalid_credentials',
  'key_expired',
  'key_revoked',
  'key_disabled',
  'ip_not_allowed',
  'referrer_not_allowed',
  'forbidden',
  'rate_limited',
  'credits_exhausted',
] as const;
export type VerifyKeyCode = (typeof VERIFY_KEY_CODES)[number];

export class VerifyKeyResponse {
  @ApiProperty({ example: true }) valid: boolean;
  @ApiProperty({
    enum: VERIFY_KEY_CODES,
    description: '`valid`, or the refusal code the key would get on this API.',
  })
  code: VerifyKeyCode;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'null when no key of your organization matched.',
  })
  key_id: string | null;
  @ApiProperty({ type: String, nullable: true }) name: string | null;
  @ApiProperty({
    type: IdentitySummaryResponse,
    nullable: true,
    description: "The key's identity (customer); null when it has none or no key is named.",
  })
  identity: IdentitySummaryResponse | null;
  @ApiProperty({ type: [String], description: "The key's effective permissions; [] when no key is named." })
  permissions: Permission[];
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description: "The key's meta ({} when none); null when no key is named.",
  })
  meta: Record<string, unknown> | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: "The key's credits left (after this verify's cost when valid); null when it is unlimited.",
  })
  credits_remaining: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) expires_at: string | null;
}
