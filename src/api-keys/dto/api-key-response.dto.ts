import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IdentitySummaryResponse } from '../../identities/dto/identity.dto';
import { permissionList, Permission } from '../../roles/permissions';
import { ApiKey, KEY_STATUSES, KEY_TYPES, keyStatus } from '../api-key.entity';
import { CreditRefillResponse } from '../../common/usage-controls.dto';

const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

export class RotationPolicyResponse {
  @ApiProperty() enabled: boolean;
  @ApiProperty({ type: 'integer', nullable: true }) days: number | null;
  @ApiProperty({ type: 'integer' }) grace_period_seconds: number;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) next_rotation_at: string | null;
}

export class RateLimitResponse {
  @ApiProperty({ type: 'integer', nullable: true, description: 'null: the service default applies' })
  requests_per_minute: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'null: the service default applies' })
  requests_per_hour: number | null;
}

export class CreditsResponse {
  @ApiProperty({ type: 'integer', description: 'Requests the key may still make.' }) remaining: number;
  @ApiProperty({ type: CreditRefillResponse, nullable: true }) refill: CreditRefillResponse | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'The last refill (00:00 UTC of its day); null before the first.',
  })
  refilled_at: string | null;
}

/** What the key object shows of a balance; `remaining` is the live one (see CreditBalances). */
export function creditsOf(key: ApiKey, remaining: number | null): CreditsResponse | null {
  if (remaining === null) return null;
  return {
    remaining,
    refill:
      key.creditsRefillInterval && key.creditsRefillAmount
        ? { interval: key.creditsRefillInterval, amount: key.creditsRefillAmount }
        : null,
    refilled_at: iso(key.creditsRefilledAt),
  };
}

/** The key object. Never carries the value or its hash; `start` is its first 10 characters. */
export class ApiKeyResponse {
  @ApiProperty({ example: 'key_4LsQ…' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty({ example: 'developer' }) role: string;
  @ApiProperty({
    type: [String],
    example: ['agents:read', 'tasks:create'],
    description: 'Effective permissions.',
  })
  permissions: Permission[];
  @ApiProperty({ enum: KEY_TYPES }) type: string;
  @ApiProperty({ type: String, nullable: true }) owner_id: string | null;
  @ApiProperty({ type: String, nullable: true }) team_id: string | null;
  @ApiProperty({ example: 'sk_4f9Q2aB' }) start: string;
  @ApiProperty({ enum: KEY_STATUSES }) status: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) expiration: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) last_used_at: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) last_rotated_at: string | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'Set while a grace period runs.',
  })
  previous_key_expires_at: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) previous_key_last_used_at:
    string | null;
  @ApiProperty({ type: RotationPolicyResponse }) rotation_policy: RotationPolicyResponse;
  @ApiProperty({ type: [String] }) allowed_referrers: string[];
  @ApiProperty({ type: [String] }) allowed_ips: string[];
  @ApiProperty({ type: RateLimitResponse }) rate_limit: RateLimitResponse;
  @ApiProperty() hide_credentials: boolean;
  @ApiProperty({ description: 'false: the key is switched off (status `disabled`) and refused.' })
  enabled: boolean;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'Your own data, as last set; {} when none.',
  })
  meta: Record<string, unknown>;
  @ApiProperty({ type: CreditsResponse, nullable: true, description: 'null: unlimited.' })
  credits: CreditsResponse | null;
  @ApiProperty({ type: String, nullable: true, description: 'The client address of the last use.' })
  last_used_ip: string | null;
  @ApiProperty({
    type: IdentitySummaryResponse,
    nullable: true,
    description: 'The identity (customer) the key belongs to; null: none.',
  })
  identity: IdentitySummaryResponse | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description:
      'When the key was first reported leaked (GitHub secret scanning or POST /v1/credentials/revoke); null: never. ' +
      "What the report did depends on the organization's leak_response (GET /v1/organization/policies).",
  })
  leaked_at: string | null;

  /**
   * `creditsRemaining` is the live balance (it moves on every request, ahead of the row when Redis
   * holds it); the row's own value when not given.
   */
  static of(
    key: ApiKey,
    permissions: Iterable<Permission>,
    {
      now = new Date(),
      creditsRemaining = key.creditsRemaining,
      identity = null,
    }: { now?: Date; creditsRemaining?: number | null; identity?: IdentitySummaryResponse | null } = {},
  ): ApiKeyResponse {
    const graceRunning = key.previousKeyExpiresAt && key.previousKeyExpiresAt > now;
    return {
      id: key.id,
      name: key.name,
      description: key.description,
      role: key.role,
      permissions: permissionList(permissions),
      type: key.type,
      owner_id: key.ownerId,
      team_id: key.teamId,
      start: key.start,
      status: keyStatus(key, now),
      created_at: key.createdAt.toISOString(),
      updated_at: key.updatedAt.toISOString(),
      expiration: iso(key.expiration),
      last_used_at: iso(key.lastUsedAt),
      last_rotated_at: iso(key.lastRotatedAt),
      previous_key_expires_at: graceRunning ? iso(key.previousKeyExpiresAt) : null,
      previous_key_last_used_at: graceRunning ? iso(key.previousKeyLastUsedAt) : null,
      rotation_policy: {
        enabled: key.rotationEnabled,
        days: key.rotationDays,
        grace_period_seconds: key.rotationGraceSeconds,
        next_rotation_at: key.rotationEnabled ? iso(key.nextRotationAt) : null,
      },
      allowed_referrers: key.allowedReferrers,
      allowed_ips: key.allowedIps,
      rate_limit: { requests_per_minute: key.rateLimitPerMinute, requests_per_hour: key.rateLimitPerHour },
      hide_credentials: key.hideCredentials,
      enabled: key.enabled,
      meta: key.meta ?? {},
      credits: creditsOf(key, creditsRemaining),
      last_used_ip: key.lastUsedIp,
      identity,
      leaked_at: iso(key.leakedAt),
    };
  }
}

export class CreatedApiKeyResponse extends ApiKeyResponse {
  @ApiProperty({ description: 'The key value. Shown only in this response; store it now.', example: 'sk_…' })
  key: string;
}

export class ApiKeyPage {
  @ApiProperty({ type: [ApiKeyResponse] }) data: ApiKeyResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}

export class DefaultRateLimitResponse {
  @ApiProperty({ type: 'integer', example: 600, description: 'DEFAULT_REQUESTS_PER_MINUTE' })
  requests_per_minute: number;
  @ApiProperty({ type: 'integer', example: 20000, description: 'DEFAULT_REQUESTS_PER_HOUR' })
  requests_per_hour: number;
}

/** What applies to a key that sets no limit of its own: this service's configuration, read-only. */
export class ApiKeyDefaultsResponse {
  @ApiProperty({
    type: DefaultRateLimitResponse,
    description: 'The limits of a key whose rate_limit fields are null.',
  })
  rate_limit: DefaultRateLimitResponse;
  @ApiProperty({
    type: 'integer',
    example: 20,
    description: 'MAX_CONCURRENT_REQUESTS_PER_KEY: requests of one key in flight at once, per instance.',
  })
  max_concurrent_requests: number;
}

export class VerifyResponse {
  @ApiProperty({ example: true }) valid: boolean;
  @ApiProperty() key_id: string;
  @ApiProperty() name: string;
  @ApiProperty() role: string;
  @ApiProperty({ type: [String] }) permissions: Permission[];
  @ApiPropertyOptional({ type: String, format: 'date-time', nullable: true }) expires_at: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, description: "The key's meta; {} when none." })
  meta: Record<string, unknown>;
  @ApiProperty({
    type: IdentitySummaryResponse,
    nullable: true,
    description: 'The identity (customer) the key belongs to; null: none.',
  })
  identity: IdentitySummaryResponse | null;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: "Credits left after this request's; null when the key is unlimited.",
  })
  credits_remaining: number | null;
}
