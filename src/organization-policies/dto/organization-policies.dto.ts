import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn } from 'class-validator';
import { IntegerField, Omittable } from '../../common/validators';
import { LEAK_RESPONSES, type LeakResponse } from '../organization-policy.entity';

export const MAX_KEY_LIFETIME_DAYS = 3650;

export class OrganizationPoliciesResponse {
  @ApiProperty({
    enum: LEAK_RESPONSES,
    description:
      'What happens to an active key reported leaked: `revoke` (revoked, reason `leaked`), `disable` ' +
      '(`enabled: false`, an operator can enable it again) or `notify` (nothing changes). Every report ' +
      'is recorded as `key.leaked` (audit log and webhook) whatever the response.',
  })
  leak_response: LeakResponse;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    minimum: 1,
    maximum: MAX_KEY_LIFETIME_DAYS,
    description:
      'A key created or changed must get an expiration at most this many days ahead; null: no limit.',
  })
  max_key_lifetime_days: number | null;

  @ApiProperty({ description: 'A key created or changed must have an expiration.' })
  require_expiration: boolean;
}

export class UpdateOrganizationPoliciesDto {
  @ApiPropertyOptional({ enum: LEAK_RESPONSES })
  @Omittable()
  @IsIn(LEAK_RESPONSES)
  leak_response?: LeakResponse;

  // organization_policies.max_key_lifetime_days is an integer column.
  @IntegerField({
    minimum: 1,
    maximum: MAX_KEY_LIFETIME_DAYS,
    optional: 'nullable',
    description: 'null removes the limit.',
  })
  max_key_lifetime_days?: number | null;

  @ApiPropertyOptional()
  @Omittable()
  @IsBoolean()
  require_expiration?: boolean;
}
