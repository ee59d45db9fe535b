import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { ListQueryDto } from '../../common/pagination';
import type { AuditEntry } from '../audit-entry.entity';
import { AUDIT_ACTIONS, type AuditAction } from '../audit.service';

export class AuditQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: AUDIT_ACTIONS, example: 'key.rotated' })
  @IsOptional()
  @IsIn(AUDIT_ACTIONS, { message: `action must be one of ${AUDIT_ACTIONS.join(', ')}` })
  action?: AuditAction;

  @ApiPropertyOptional({ example: 'key_2Nq…' })
  @IsOptional()
  @IsString()
  @MaxLength(40)
  key_id?: string;
}

export class AuditActorResponse {
  @ApiProperty({ enum: ['user', 'api_key', 'system'] }) type: string;
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
