import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, MaxLength, MinLength } from 'class-validator';
import { DisplayNameField, Omittable } from '../../common/validators';
import type { OrganizationSecret } from '../organization-secret.entity';

export const SECRET_VALUE_MAX_LENGTH = 8192;

export class CreateOrganizationSecretDto {
  @DisplayNameField({ example: 'openai-production' })
  name: string;

  @ApiProperty({
    minLength: 1,
    maxLength: SECRET_VALUE_MAX_LENGTH,
    writeOnly: true,
    description: 'The value (a provider API key, say). Stored sealed; no response ever shows it again.',
  })
  @IsString()
  @MinLength(1)
  @MaxLength(SECRET_VALUE_MAX_LENGTH)
  value: string;
}

export class UpdateOrganizationSecretDto {
  @DisplayNameField({ optional: true })
  name?: string;

  @ApiPropertyOptional({
    minLength: 1,
    maxLength: SECRET_VALUE_MAX_LENGTH,
    writeOnly: true,
    description: 'A new value, replacing the old one for every run from now on.',
  })
  @Omittable()
  @IsString()
  @MinLength(1)
  @MaxLength(SECRET_VALUE_MAX_LENGTH)
  value?: string;
}

/** The secret object: never its value. */
export class OrganizationSecretResponse {
  @ApiProperty({ example: 'sec_4LsQ…' }) id: string;
  @ApiProperty({ example: 'openai-production' }) name: string;
  @ApiProperty({
    type: String,
    nullable: true,
    example: 'x9Qa',
    description: "The value's last four characters; null when the value is shorter than 16 characters.",
  })
  last4: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time', description: 'The last change of its name or value.' })
  updated_at: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When a run last used it (to the minute); null until one does.',
  })
  last_used_at: string | null;

  static of(secret: OrganizationSecret): OrganizationSecretResponse {
    return {
      id: secret.id,
      name: secret.name,
      last4: secret.last4,
      created_at: secret.createdAt.toISOString(),
      updated_at: secret.updatedAt.toISOString(),
      last_used_at: secret.lastUsedAt?.toISOString() ?? null,
    };
  }
}

export class OrganizationSecretPage {
  @ApiProperty({ type: [OrganizationSecretResponse] }) data: OrganizationSecretResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}

/** Kept only for values long enough that four characters say little about the rest. */
export function last4Of(value: string): string | null {
  const characters = [...value];
  return characters.length >= 16 ? characters.slice(-4).join('') : null;
}
