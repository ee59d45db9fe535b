import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { ListQueryDto } from '../../common/pagination';
import { CHECKPOINT_PATTERN } from '../audit-chain';
import { CHAIN_PROBLEMS, ChainProblem } from '../audit-chain-verifier';
import type { ActorType, AuditEntry } from '../audit-entry.entity';
import { AUDIT_ACTION_FILTER_SCHEMA, AUDIT_ACTION_SCHEMA } from '../audit-actions';
import { AUDIT_EXPANSIONS, AuditExpansion, AuditNames } from '../audit-expansions';

const ACTOR_TYPES: ActorType[] = ['user', 'api_key', 'system'];

/**
 * `expand=actor,key` (or `expand=actor&expand=key`): names behind the ids, asked for, so that an entry's
 * shape stays what it always was for a client that does not ask.
 */
export class AuditExpandQueryDto extends ListQueryDto {
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', enum: [...AUDIT_EXPANSIONS] },
    example: ['actor', 'key'],
    description:
      "`actor`: each actor also carries `name` (a user's name, an API key's name) and `email` (a user's); " +
      '`key`: each entry also carries `key` `{id, name, deleted}` (null without a key). Comma-separated or repeated.',
  })
  @IsOptional()
  // One value, a comma-separated list, or the parameter repeated: always a list of names here.
  @Transform(({ value }: { value: unknown }) =>
    (Array.isArray(value) ? value : [value]).flatMap((part) =>
      typeof part === 'string' ? part.split(',') : [part],
    ),
  )
  @IsArray()
  @ArrayMaxSize(AUDIT_EXPANSIONS.length * 2)
  @IsIn(AUDIT_EXPANSIONS, { each: true, message: `expand must list only ${AUDIT_EXPANSIONS.join(', ')}` })
  expand?: AuditExpansion[];
}

export class AuditQueryDto extends AuditExpandQueryDto {
  // The enum is this app's declared actions and groups, written into the document when it is built
  // (describeAuditActions); AuditService.list checks the value against the same registry (AuditActions),
  // which a static decorator here could not know.
  @ApiPropertyOptional({
    enum: ['key.created'],
    enumName: AUDIT_ACTION_FILTER_SCHEMA,
    example: 'user.*',
    description: 'One action, or a group of them: `user.*` matches every `user.` action.',
  })
  @IsOptional()
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
  @ApiPropertyOptional({ description: 'The OAuth client a user acted through (an OAuth access token).' })
  client_id?: string;
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    description:
      "With `expand=actor`: the user's name or the API key's name (also of a key deleted since); null for the system.",
  })
  name?: string | null;
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    description: "With `expand=actor`: the user's email; null for keys and the system.",
  })
  email?: string | null;
}

export class AuditKeyResponse {
  @ApiProperty({ example: 'key_2Nq…' }) id: string;
  @ApiProperty({ type: String, nullable: true, description: "The key's name; null if it is not known." })
  name: string | null;
  @ApiProperty({
    description:
      'The key was deleted since (or is no longer known): its entries stay, the key itself answers 404.',
  })
  deleted: boolean;
}

export class AuditEntryResponse {
  @ApiProperty({ example: 'aud_8Hq…' }) id: string;
  // Every declared action (describeAuditActions), an extension's included.
  @ApiProperty({ enum: ['key.created'], enumName: AUDIT_ACTION_SCHEMA, example: 'key.created' })
  action: string;
  @ApiProperty({ type: String, nullable: true }) key_id: string | null;
  @ApiProperty({ type: AuditActorResponse }) actor: AuditActorResponse;
  @ApiProperty({ type: String, nullable: true }) ip: string | null;
  @ApiProperty({ type: String, nullable: true }) user_agent: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) details: Record<string, unknown>;
  @ApiPropertyOptional({
    type: AuditKeyResponse,
    nullable: true,
    description: 'With `expand=key`: the key the entry concerns, by name, and whether it was deleted since.',
  })
  key?: AuditKeyResponse | null;

  /** `names`: what `expand` asked for (AuditService.namesOf); without it the entry is ids only. */
  static of(entry: AuditEntry, names?: AuditNames): AuditEntryResponse {
    const actor: AuditActorResponse = { type: entry.actorType, id: entry.actorId };
    if (entry.actorClientId) actor.client_id = entry.actorClientId;
    if (names?.actors) {
      const subject =
        entry.actorId === null
          ? undefined
          : (entry.actorType === 'user' ? names.actors.users : names.actors.keys).get(entry.actorId);
      actor.name = subject?.name ?? null;
      actor.email = subject?.email ?? null;
    }
    const response: AuditEntryResponse = {
      id: entry.id,
      action: entry.action,
      key_id: entry.keyId,
      actor,
      ip: entry.ip,
      user_agent: entry.userAgent,
      created_at: entry.createdAt.toISOString(),
      details: entry.details,
    };
    if (names?.keys) {
      const key = entry.keyId === null ? undefined : names.keys.get(entry.keyId);
      response.key =
        entry.keyId === null
          ? null
          : { id: entry.keyId, name: key?.name ?? null, deleted: key?.deleted ?? true };
    }
    return response;
  }
}

export class AuditPage {
  @ApiProperty({ type: [AuditEntryResponse] }) data: AuditEntryResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}

/** `GET /v1/audit-log/integrity?checkpoint=`: a checkpoint an earlier answer gave, to check against. */
export class AuditIntegrityQueryDto {
  @ApiPropertyOptional({
    description:
      'A `checkpoint.token` an earlier answer gave: the chain must still hold that entry, at that place, with ' +
      'that link (entries deleted past it show as `entries_missing`).',
    pattern: CHECKPOINT_PATTERN.source,
    maxLength: 200,
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @Matches(CHECKPOINT_PATTERN, { message: 'checkpoint must be a checkpoint token this service issued' })
  checkpoint?: string;
}

export class AuditCheckpointResponse {
  @ApiProperty({
    type: 'integer',
    description: 'Entries of the chain up to and including this one.',
    example: 1234,
  })
  entries: number;
  @ApiProperty({ example: 'aud_8Hq…', description: "The chain's last entry when the check began." })
  entry_id: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({
    description:
      'Signed with AUDIT_CHAIN_SECRET: keep it outside the database and pass it back as `?checkpoint=`.',
  })
  token: string;
}

export class AuditChainResponse {
  @ApiProperty() valid: boolean;
  @ApiProperty({ type: 'integer', description: 'Entries in the chain when the check began.' })
  entries: number;
  @ApiProperty({
    type: 'integer',
    description:
      'Of them, entries written before the chain had a key (AUDIT_CHAIN_SECRET): the chain starts with them, ' +
      'and they are pinned only by the keyed entries after them.',
  })
  legacy_entries: number;
  @ApiProperty({ type: String, nullable: true }) first_invalid_id: string | null;
  @ApiProperty({
    enum: CHAIN_PROBLEMS,
    nullable: true,
    description:
      '`entry_altered`: `first_invalid_id` does not match its link (changed, forged, or an entry before it ' +
      'deleted); `checkpoint_mismatch`: the entry at the checkpoint is not the one it signed; ' +
      '`entries_missing`: the chain ends before its recorded head or the checkpoint (its last entries were ' +
      'deleted); `head_mismatch`: the recorded head is missing, not signed with the key, or not the last entry.',
  })
  problem: ChainProblem | null;
  @ApiProperty({
    type: AuditCheckpointResponse,
    nullable: true,
    description: "A signed checkpoint of the chain's last entry; null when the chain is invalid or empty.",
  })
  checkpoint: AuditCheckpointResponse | null;
}
