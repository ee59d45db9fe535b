import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';

/** RFC 7662's request: form-encoded (or JSON). */
export class IntrospectTokenDto {
  @ApiProperty({ description: 'The OAuth access token to describe.' })
  @IsString()
  @MaxLength(4096)
  token: string;

  @ApiPropertyOptional({ description: 'RFC 7662 hint; access tokens are the only kind described.' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  token_type_hint?: string;
}

export class IntrospectionResponse {
  @ApiProperty({
    description: 'False for an unknown, expired or revoked token, or one of another organization.',
  })
  active: boolean;

  @ApiPropertyOptional({ description: 'The granted permission names, separated by spaces.' })
  scope?: string;

  @ApiPropertyOptional({ description: 'The client the token was issued to.' })
  client_id?: string;

  @ApiPropertyOptional({ description: 'The id of the user who consented.' })
  sub?: string;

  @ApiPropertyOptional({
    description: 'The resource the token is for (`<PUBLIC_URL>/mcp` or `<PUBLIC_URL>/v1`).',
  })
  aud?: string;

  @ApiPropertyOptional({ type: 'integer', description: 'Expiry, seconds since the epoch.' })
  exp?: number;
}
