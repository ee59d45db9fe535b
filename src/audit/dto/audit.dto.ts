import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { ListQueryDto } from '../../common/pagination';
import type { ActorType, AuditEntry } from '../audit-entry.entity';
import { AUDIT_ACTION_FILTERS, AUDIT_ACTIONS } from '../audit.service';

const ACTOR_TYPES: ActorType[] = ['user', 'api_key', 'system'];

export class AuditQueryDto extends ListQueryDto {
  @ApiPropertyOptional({
    enum: AUDIT_ACTION_FILTERS,
    example: 'user.*',
    description: 'One action, or a group of them: `user.*` matches every `user.` action.',
  })
  @IsOptional()
  @IsIn(AUDIT_ACTION_FILTERS, { message: `action must be one of ${AUDIT_ACTION_FILTERS.join(', ')}` })
  action?: string;

  @ApiPropertyOptional({ enum: ACTOR_TYPES, example: 'user' })
  @IsOptional()
  @IsIn(ACTOR_TYPES, { message: `actor_type must be one of ${ACTOR_TYPES.join(', ')}` })
  actor_type?: ActorType;

  @ApiPropertyOptional({
    example: 'usr_0Fq3Vn7Kc2Hx9Tp4Rm8Wd1',
    description: 'The id of the user or API key that acted.',
  })
  @IsOptional()
  @IsString()
  // Ids are a lowercase kind, an underscore and 22 base62 characters (src/common/ids.ts).
  @Matches(/^[a-z]{2,12}_[0-9A-Za-z]{22}$/, { message: 'actor_id must be a user or API key id' })
  actor_id?: string;

  @ApiPropertyOptional({ example: 'key_2Nq…' })
  @IsOptional()
  @IsString()
  @MaxLength(40)
  key_id?: string;
}

/** A key's own audit log: the organization log's filters but the key, which its path names. */
export class KeyAuditQueryDto extends OmitType(AuditQueryDto, ['key_id'] as const) {}

export class AuditActorResponse {
  @ApiProperty({ enum: ACTOR_TYPES }) type: string;
  @ApiProperty({ type: String, nullable: true }) id: string | null;
}

export class AuditEntryResponse {
  @ApiProperty({ example: 'aud_8Hq…' }) id: string;
  @ApiProperty({ enum: AUDIT_ACTIONS, example: 'key.created' }) action: string;
  @ApiProperty({ type: String, nullable: true }) key_id: string | null;
  @ApiProperty({ type: AuditActorResponse }) actor: AuditActorResponse;
  @ApiProperty({ type: String, nullable: true }) ip: string | null;
  @ApiProperty({ type: String, nullable: true }) user_agent: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) details: Record<string, unknown>;

  static of(entry: AuditEntry): AuditEntryResponse {
    return {
      id: entry.id,
      action: entry.action,
      key_id: entry.keyId,
      actor: { type: entry.actorType, id: entry.actorId },
      ip: entry.ip,
      user_agent: entry.userAgent,
      created_at: entry.createdAt.toISOString(),
      details: entry.details,
    };
  }
}

export class AuditPage {
  @ApiProperty({ type: [AuditEntryResponse] }) data: AuditEntryResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}

export class AuditChainResponse {
  @ApiProperty() valid: boolean;
  @ApiProperty() entries: number;
  @ApiProperty({ type: String, nullable: true }) first_invalid_id: string | null;
}
