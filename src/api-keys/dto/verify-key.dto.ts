import { IdentitySummaryResponse } from '../../identities/dto/identity.dto';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsIP, isIP, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { acceptsWithoutValidation, isPlainObject } from '../../common/validation';
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

  // Not IntegerField: null is taken here as absent (IsOptional), which the quick check below relies on.
  @ApiPropertyOptional({
    type: 'integer',
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

const VERIFY_KEY_FIELDS: ReadonlySet<string> = new Set(['key', 'permissions', 'cost', 'ip', 'referrer']);

/**
 * The bodies a service sends thousands of times a second, accepted without class-validator: each
 * condition is a decorator above, made stricter where that is simpler (a length in UTF-16 units, where
 * MaxLength counts characters; a field that is absent, where IsOptional also lets null through). Other
 * bodies are validated as usual. verify-key.dto.spec.ts checks this against class-validator.
 */
export function isPlainVerifyKeyBody(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  for (const name of Object.keys(value)) if (!VERIFY_KEY_FIELDS.has(name)) return false;
  const { key, permissions, cost, ip, referrer } = value;
  return (
    typeof key === 'string' &&
    key.length <= MAX_KEY_LENGTH &&
    (permissions === undefined || typeof permissions === 'string') &&
    (cost === undefined ||
      (Number.isInteger(cost) && (cost as number) >= 0 && (cost as number) <= MAX_VERIFY_COST)) &&
    (ip === undefined || (typeof ip === 'string' && isIP(ip))) &&
    (referrer === undefined || (typeof referrer === 'string' && referrer.length <= MAX_REFERRER_LENGTH))
  );
}

acceptsWithoutValidation(VerifyKeyDto, isPlainVerifyKeyBody);

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
  'too_many_concurrent_requests',
] as const;
/**
 * A built-in code, or one an extension's access policy declared (defineAccessDenial): the key check that
 * answers verify is the API's own, policies included. The OpenAPI document lists this app's.
 */
export type VerifyKeyCode = (typeof VERIFY_KEY_CODES)[number] | (string & {});

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
    type: 'integer',
    nullable: true,
    description: "The key's credits left (after this verify's cost when valid); null when it is unlimited.",
  })
  credits_remaining: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) expires_at: string | null;
}
