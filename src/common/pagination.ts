import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { CommonError, CommonErrorCode } from './common.errors';
import { IntegerField } from './validators';

export class ListQueryDto {
  @IntegerField({ minimum: 1, maximum: 100, default: 20, optional: 'omittable', fromQuery: true })
  limit?: number;

  @ApiPropertyOptional({ description: "Opaque cursor from a previous page's `next_cursor`." })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  cursor?: string;
}

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

interface CursorPosition {
  createdAt: Date;
  id: string;
}

function encodeCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.toISOString(), position.id])).toString('base64url');
}

// What encodeCursor writes: a four-digit-year ISO timestamp and an id. Anything else (a NUL in the id,
// a year PostgreSQL cannot store) would otherwise reach the query and fail there as a 500.
const CURSOR_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const CURSOR_ID = /^[a-z]+_[0-9A-Za-z]{22}$/;

function decodeCursor(cursor: string): CursorPosition {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const date = new Date(createdAt);
    if (
      typeof createdAt !== 'string' ||
      !CURSOR_TIMESTAMP.test(createdAt) ||
      Number.isNaN(date.getTime()) ||
      date.toISOString() !== createdAt ||
      typeof id !== 'string' ||
      !CURSOR_ID.test(id)
    ) {
      throw new Error('bad cursor');
    }
    return { createdAt: date, id };
  } catch {
    throw invalidCursor();
  }
}

/** 400 invalid_cursor: what any list answers for a cursor it did not issue. */
export function invalidCursor(): CommonError {
  return new CommonError(CommonErrorCode.InvalidCursor, 'The cursor is not one this service issued.', {
    errors: [{ field: 'cursor', message: 'cursor is invalid' }],
  });
}

/**
 * Keyset pagination, newest first, stable under concurrent inserts: orders by (created_at, id)
 * descending and continues strictly after the last row seen. Entities must expose `createdAt` and
 * `id`, with `created_at` stored at millisecond precision so the cursor round-trips exactly.
 */
export async function paginate<E extends ObjectLiteral & { id: string; createdAt: Date }>(
  query: SelectQueryBuilder<E>,
  { limit = 20, cursor }: ListQueryDto,
): Promise<Page<E>> {
  const alias = query.alias;
  if (cursor) {
    const position = decodeCursor(cursor);
    query.andWhere(`(${alias}.created_at, ${alias}.id) < (:cursorCreatedAt, :cursorId)`, {
      cursorCreatedAt: position.createdAt,
      cursorId: position.id,
    });
  }
  const rows = await query
    .orderBy(`${alias}.created_at`, 'DESC')
    .addOrderBy(`${alias}.id`, 'DESC')
    .limit(limit + 1)
    .getMany();
  const data = rows.slice(0, limit);
  const last = data[data.length - 1];
  return { data, next_cursor: rows.length > limit && last ? encodeCursor(last) : null };
}

export function mapPage<E, R>(page: Page<E>, map: (entity: E) => R): Page<R> {
  return { data: page.data.map(map), next_cursor: page.next_cursor };
}
