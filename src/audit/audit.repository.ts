import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import type { Chained, ChainHead } from './audit-chain';
import { ActorType, AuditEntry } from './audit-entry.entity';

export type SignedHead = ChainHead & { mac: string };

/** An entry as the chain check reads it. */
export type ChainedRow = Chained & Pick<AuditEntry, 'sequence' | 'previousHash' | 'hash' | 'keyed'>;

interface HeadRow {
  organization_id: string;
  sequence: string;
  entry_id: string;
  hash: string;
  mac: string;
}

const signedHeadOf = (row: HeadRow): SignedHead => ({
  organizationId: row.organization_id,
  sequence: row.sequence,
  entryId: row.entry_id,
  hash: row.hash,
  mac: row.mac,
});

/**
 * The audit_entries and audit_chain_heads tables: every query on them. Appends run in the caller's transaction, under the
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

  /** The organization's chain head (audit_chain_heads), if it has one. */
  async head(manager: EntityManager, organizationId: string): Promise<SignedHead | undefined> {
    const [head] = await manager.query<HeadRow[]>(
      `SELECT organization_id, sequence::text AS sequence, entry_id, hash, mac
         FROM audit_chain_heads WHERE organization_id = $1`,
      [organizationId],
    );
    return head && signedHeadOf(head);
  }

  /** The link of the organization's latest entry, and whether it is keyed, if it has any. */
  async lastEntry(
    manager: EntityManager,
    organizationId: string,
  ): Promise<{ hash: string; keyed: boolean } | undefined> {
    const [last] = await manager.query<{ hash: string; keyed: boolean }[]>(
      `SELECT hash, keyed FROM audit_entries WHERE organization_id = $1 ORDER BY sequence DESC LIMIT 1`,
      [organizationId],
    );
    return last;
  }

  /** Inserts one organization's entries, in chain order; returns the sequence of the last. */
  async insert(manager: EntityManager, rows: QueryDeepPartialEntity<AuditEntry>[]): Promise<string> {
    const result = await manager.insert(AuditEntry, rows);
    // The database numbers the rows in the order given: the chain's last entry has the highest.
    return result.generatedMaps
      .map((generated) => BigInt(generated.sequence as string))
      .reduce((a, b) => (a > b ? a : b))
      .toString();
  }

  async saveHead(manager: EntityManager, head: SignedHead): Promise<void> {
    await manager.query(
      `INSERT INTO audit_chain_heads (organization_id, sequence, entry_id, hash, mac)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (organization_id) DO UPDATE
         SET sequence = EXCLUDED.sequence, entry_id = EXCLUDED.entry_id, hash = EXCLUDED.hash, mac = EXCLUDED.mac`,
      [head.organizationId, head.sequence, head.entryId, head.hash, head.mac],
    );
  }

  /**
   * Where a verification of the organization's chain stops: its head and its last entry's sequence, read
   * in one statement so that both come from one snapshot (an append commits both or neither).
   */
  async chainEnd(organizationId: string): Promise<{ lastSequence: string | null; head?: SignedHead }> {
    const [row] = await this.entries.manager.query<(Partial<HeadRow> & { last_sequence: string | null })[]>(
      `SELECT (SELECT max(sequence)::text FROM audit_entries WHERE organization_id = $1) AS last_sequence,
              head.organization_id, head.sequence::text AS sequence, head.entry_id, head.hash, head.mac
         FROM (SELECT 1) AS one
         LEFT JOIN audit_chain_heads head ON head.organization_id = $1`,
      [organizationId],
    );
    return {
      lastSequence: row.last_sequence,
      head: row.organization_id ? signedHeadOf(row as HeadRow) : undefined,
    };
  }

  /**
   * At most `limit` entries of the organization's chain after `afterSequence` and up to
   * `throughSequence`, oldest first: keyset pagination on (organization_id, sequence), so each page is
   * one short index range whatever the log's length.
   */
  async chainPage(
    organizationId: string,
    afterSequence: string,
    throughSequence: string,
    limit: number,
  ): Promise<ChainedRow[]> {
    const rows = await this.entries.manager.query<Record<string, unknown>[]>(
      `SELECT id, sequence::text AS sequence, organization_id, key_id, action, actor_type, actor_id,
              actor_client_id, ip, user_agent, details, created_at, previous_hash, hash, keyed
         FROM audit_entries
        WHERE organization_id = $1 AND sequence > $2 AND sequence <= $3
        -- The column, not the text alias above: '10' sorts before '9'.
        ORDER BY audit_entries.sequence
        LIMIT $4`,
      [organizationId, afterSequence, throughSequence, limit],
    );
    return rows.map((row) => ({
      id: row.id as string,
      sequence: row.sequence as string,
      organizationId: row.organization_id as string,
      keyId: row.key_id as string | null,
      action: row.action as string,
      actorType: row.actor_type as ActorType,
      actorId: row.actor_id as string | null,
      actorClientId: row.actor_client_id as string | null,
      ip: row.ip as string | null,
      userAgent: row.user_agent as string | null,
      details: row.details as Record<string, unknown>,
      createdAt: row.created_at as Date,
      previousHash: row.previous_hash as string,
      hash: row.hash as string,
      keyed: row.keyed as boolean,
    }));
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

  /** The organization's whole chain, oldest first: for small chains (tests); the check reads chainPage. */
  chainOf(organizationId: string): Promise<AuditEntry[]> {
    return this.entries.find({ where: { organizationId }, order: { sequence: 'ASC' } });
  }
}
