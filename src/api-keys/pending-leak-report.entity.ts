import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { LeakSource } from './api-key-leak.entity';

/**
 * A leak report taken but not yet applied (POST /v1/credentials/revoke): the values' hashes, kept until
 * the report's leak_responses are applied, so the answer leaves before any key is looked up and a report
 * answered just before its instance stops is applied by another instance, or by this one when it starts.
 * Only hashes are kept, the ones api_keys holds already; the values themselves are never stored.
 */
@Entity({ name: 'pending_leak_reports' })
@Index('pending_leak_reports_received_at_idx', ['receivedAt'])
export class PendingLeakReport {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'pending_leak_reports_pkey' })
  id: string;

  @Column({ type: 'text' })
  source: LeakSource;

  @Column({ name: 'value_hashes', type: 'text', array: true })
  valueHashes: string[];

  @Column({ type: 'text', nullable: true })
  ip: string | null;

  @Column({ name: 'user_agent', type: 'text', nullable: true })
  userAgent: string | null;

  @Column({ name: 'received_at', type: 'timestamptz', precision: 3 })
  receivedAt: Date;
}
