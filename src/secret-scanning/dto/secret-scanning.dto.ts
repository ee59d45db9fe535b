import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsString, MaxLength } from 'class-validator';

export const MAX_REVOKED_CREDENTIALS = 1000;

/** One match in a GitHub secret-scanning report. */
export class GitHubReportedToken {
  @ApiProperty({ description: 'The value found.' }) token: string;
  @ApiProperty({ description: 'The token type the pattern was registered as; echoed back.' }) type: string;
  @ApiPropertyOptional({ description: 'Where it was found.' }) url?: string;
  @ApiPropertyOptional({ example: 'commit', description: 'What kind of place (commit, issue, gist, …).' })
  source?: string;
}

/** GitHub's feedback format: one entry per reported token. */
export class GitHubTokenLabel {
  @ApiProperty({ description: 'SHA-256 of the token, hex.', example: 'a3c1…' }) token_hash: string;
  @ApiProperty({ description: "The report's `type`." }) token_type: string;
  @ApiProperty({
    enum: ['true_positive', 'false_positive'],
    description:
      '`true_positive`: a value of this service that names a key, of any organization, that still exists ' +
      '(active, expired, disabled or revoked); `false_positive`: anything else.',
  })
  label: 'true_positive' | 'false_positive';
}

export class RevokeCredentialsDto {
  @ApiProperty({
    type: [String],
    minItems: 1,
    maxItems: MAX_REVOKED_CREDENTIALS,
    example: ['sk_…'],
    description: 'Values found in public (each at most 1000 characters).',
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_REVOKED_CREDENTIALS)
  @IsString({ each: true })
  @MaxLength(1000, { each: true })
  credentials: string[];
}

export class RevokeCredentialsResponse {
  @ApiProperty({
    type: 'integer',
    description: 'How many values were received; says nothing about any of them.',
  })
  received: number;
}
