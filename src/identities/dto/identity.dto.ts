import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { ListQueryDto } from '../../common/pagination';
import {
  CreditRefillResponse,
  CreditsDto,
  IsMetaObject,
  RateLimitDto,
} from '../../common/usage-controls.dto';
import { NestedObject, NoControlCharacters, Omittable } from '../../common/validators';
import type { Identity } from '../identity.entity';

const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

class IdentitySettingsDto {
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    example: { plan: 'pro', company: 'Acme' },
    description:
      'Your own data about the customer, at most 4 KiB as JSON text; never a secret. PATCH replaces it whole; null clears it.',
  })
  @IsOptional()
  @IsMetaObject()
  meta?: Record<string, unknown> | null;

  @ApiPropertyOptional({
    type: RateLimitDto,
    nullable: true,
    description:
      "A limit shared by all the identity's keys, beside each key's own: a request must fit both. Omitted or null: none.",
  })
  @IsOptional()
  @NestedObject(() => RateLimitDto)
  rate_limit?: RateLimitDto | null;

  @ApiPropertyOptional({
    type: CreditsDto,
    nullable: true,
    description:
      "A budget shared by all the identity's keys: a request spends from it and from its key's own credits, or from neither. Omitted or null: none.",
  })
  @IsOptional()
  @NestedObject(() => CreditsDto)
  credits?: CreditsDto | null;
}

export class CreateIdentityDto extends IdentitySettingsDto {
  @ApiProperty({
    minLength: 1,
    maxLength: 255,
    example: 'cus_1042',
    description: 'Your id for the customer; unique in the organization.',
  })
  @IsString()
  @MinLength(1)
  @MaxLength(255)
  @NoControlCharacters()
  external_id: string;
}

export class UpdateIdentityDto extends IdentitySettingsDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 255 })
  @Omittable()
  @IsString()
  @MinLength(1)
  @MaxLength(255)
  @NoControlCharacters()
  external_id?: string;
}

export class ListIdentitiesQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ maxLength: 255, description: 'Only the identity with this external_id.' })
  @IsOptional()
  @IsString()
  @MaxLength(255)
  // No identity holds one, and PostgreSQL text cannot hold NUL.
  @NoControlCharacters()
  external_id?: string;
}

export class IdentityRateLimitResponse {
  @ApiProperty({ type: 'integer', nullable: true, description: 'null: no identity-level limit' })
  requests_per_minute: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'null: no identity-level limit' })
  requests_per_hour: number | null;
}

export class IdentityCreditsResponse {
  @ApiProperty({ type: 'integer', description: "Credits left to the identity's keys together." })
  remaining: number;
  @ApiProperty({ type: CreditRefillResponse, nullable: true })
  refill: CreditRefillResponse | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'The last refill (00:00 UTC of its day); null before the first.',
  })
  refilled_at: string | null;
}

/** The identity object. */
export class IdentityResponse {
  @ApiProperty({ example: 'idt_4LsQ…' }) id: string;
  @ApiProperty({ example: 'cus_1042' }) external_id: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'Your own data, as last set; {} when none.',
  })
  meta: Record<string, unknown>;
  @ApiProperty({
    type: IdentityRateLimitResponse,
    description: 'Always present, as on keys; both null when the identity has no limit of its own.',
  })
  rate_limit: IdentityRateLimitResponse;
  @ApiProperty({ type: IdentityCreditsResponse, nullable: true, description: 'null: no identity budget.' })
  credits: IdentityCreditsResponse | null;
  @ApiProperty({ type: 'integer', description: 'Keys (not deleted) that name this identity.' })
  key_count: number;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;

  /** `liveBalance`: the balance as the credit ledger holds it now (the row's when absent). */
  static of(identity: Identity, keyCount: number, liveBalance?: number): IdentityResponse {
    return {
      id: identity.id,
      external_id: identity.externalId,
      meta: identity.meta ?? {},
      rate_limit: {
        requests_per_minute: identity.rateLimitPerMinute,
        requests_per_hour: identity.rateLimitPerHour,
      },
      credits:
        identity.creditsRemaining === null
          ? null
          : {
              remaining: liveBalance ?? identity.creditsRemaining,
              refill:
                identity.creditsRefillInterval && identity.creditsRefillAmount
                  ? { interval: identity.creditsRefillInterval, amount: identity.creditsRefillAmount }
                  : null,
              refilled_at: iso(identity.creditsRefilledAt),
            },
      key_count: keyCount,
      created_at: identity.createdAt.toISOString(),
      updated_at: identity.updatedAt.toISOString(),
    };
  }
}

export class IdentityPage {
  @ApiProperty({ type: [IdentityResponse] }) data: IdentityResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}

/** What a key object and verify show of the key's identity. */
export class IdentitySummaryResponse {
  @ApiProperty({ example: 'idt_4LsQ…' }) id: string;
  @ApiProperty({ example: 'cus_1042' }) external_id: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: "The identity's meta; {} when none.",
  })
  meta: Record<string, unknown>;

  static of(identity: Identity): IdentitySummaryResponse {
    return { id: identity.id, external_id: identity.externalId, meta: identity.meta ?? {} };
  }
}
