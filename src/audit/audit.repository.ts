import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { ActorType, AuditEntry } from './audit-entry.entity';

/**
 * The audit_entries table: every query on it. Appends run in the caller's transaction, under the
 * organization's chain lock (see AuditService).
 */
@Injectable()
export class AuditRepository {
  constructor(@InjectRepository(AuditEntry) private readonly entries: Repository<AuditEntry>) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.entries.manager.transaction(work);
  }

  /** Holds the organization's chain until the caller's transaction ends, so appends never fork it. */
  async lockChain(manager: EntityManager, organizationId: string): Promise<void> {
    await manager.query(`SELECT pg_advisory_xact_lock(hashtext('audit:' || $1))`, [organizationId]);
  }

  /** Which of `ids` are already in the table. */
  async writtenIds(manager: EntityManager, ids: string[]): Promise<Set<string>> {
    const written = await manager.query<{ id: string }[]>(`SELECT id FROM audit_entries WHERE id = ANY($1)`, [
      ids,
    ]);
    return new Set(written.map((row) => row.id));
  }

  /** The hash of the organization's latest entry, if it has any. */
  async lastHash(manager: EntityManager, organizationId: string): Promise<string | undefined> {
    const [last] = await manager.query<{ hash: string }[]>(
      `SELECT hash FROM audit_entries WHERE organization_id = $1 ORDER BY sequence DESC LIMIT 1`,
      [organizationId],
    );
    return last?.hash;
  }

  async insert(manager: EntityManager, rows: QueryDeepPartialEntity<AuditEntry>[]): Promise<void> {
    await manager.insert(AuditEntry, rows);
  }

  page(
    organizationId: string,
    filters: {
      keyId?: string;
      action?: { exact: string } | { prefix: string };
      actorType?: ActorType;
      actorId?: string;
    },
    query: ListQueryDto,
  ): Promise<Page<AuditEntry>> {
    const builder = this.entries
      .createQueryBuilder('entry')
      .where('entry.organization_id = :organizationId', { organizationId });
    if (filters.keyId) builder.andWhere('entry.key_id = :key', { key: filters.keyId });
    if (filters.action && 'exact' in filters.action)
      builder.andWhere('entry.action = :action', { action: filters.action.exact });
    if (filters.action && 'prefix' in filters.action)
      builder.andWhere("entry.action LIKE :prefix || '%'", { prefix: filters.action.prefix });
    if (filters.actorType)
      builder.andWhere('entry.actor_type = :actorType', { actorType: filters.actorType });
    if (filters.actorId) builder.andWhere('entry.actor_id = :actorId', { actorId: filters.actorId });
    return paginate(builder, query);
  }

  /** The organization's whole chain, oldest first. */
  chainOf(organizationId: string): Promise<AuditEntry[]> {
    return this.entries.find({ where: { organizationId }, order: { sequence: 'ASC' } });
  }
}
