import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, ValidateBy } from 'class-validator';
import { INT4_MAX, IntegerField, NestedObject } from './validators';

/**
 * What a key and an identity (the customer behind keys) both carry: the integrator's `meta`, a rate
 * limit and a credit balance. Shared here so both validate them by one rule.
 */

export const REFILL_INTERVALS = ['daily', 'monthly'] as const;
export type RefillInterval = (typeof REFILL_INTERVALS)[number];

/** The contract's bound on `meta`, measured as the JSON text the object will carry. */
export const MAX_META_BYTES = 4096;

export const IsMetaObject = (): PropertyDecorator =>
  ValidateBy({
    name: 'isMetaObject',
    validator: {
      validate: (value: unknown) =>
        value === null ||
        value === undefined ||
        (typeof value === 'object' &&
          !Array.isArray(value) &&
          Buffer.byteLength(JSON.stringify(value), 'utf8') <= MAX_META_BYTES),
      defaultMessage: () => `meta must be a JSON object of at most ${MAX_META_BYTES} bytes as JSON text`,
    },
  });

/** A balance's refill as key and identity objects show it. */
export class CreditRefillResponse {
  @ApiProperty({ enum: REFILL_INTERVALS }) interval: string;
  @ApiProperty({ type: 'integer' }) amount: number;
}

export class CreditRefillDto {
  @ApiProperty({
    enum: REFILL_INTERVALS,
    description: 'daily: at 00:00 UTC; monthly: on the 1st, 00:00 UTC.',
  })
  @IsIn(REFILL_INTERVALS)
  interval: RefillInterval;

  // credits_refill_amount is an integer column.
  @IntegerField({ minimum: 1, maximum: INT4_MAX, description: 'What `remaining` is set to at each refill.' })
  amount: number;
}

export class CreditsDto {
  // credits_remaining is a bigint column; this bound keeps balances exact as doubles when added up.
  @IntegerField({ minimum: 0, maximum: 1_000_000_000_000, description: 'Requests the key may still make.' })
  remaining: number;

  @ApiPropertyOptional({ type: CreditRefillDto, nullable: true, description: 'Omitted or null: no refill.' })
  @IsOptional()
  @NestedObject(() => CreditRefillDto)
  refill?: CreditRefillDto | null;
}

export class RateLimitDto {
  // Both are integer columns (rate_limit_per_minute, rate_limit_per_hour), far above these bounds.
  @IntegerField({ minimum: 1, maximum: 1_000_000, optional: 'omittable' })
  requests_per_minute?: number;

  @IntegerField({ minimum: 1, maximum: 60_000_000, optional: 'omittable' })
  requests_per_hour?: number;
}
