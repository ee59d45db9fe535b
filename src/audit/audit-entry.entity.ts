import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

export type ActorType = 'user' | 'api_key' | 'system';

/**
 * One audited event. Rows are append-only; each carries the SHA-256 of its content and of the previous
 * entry of its organization, so a changed or removed row breaks the chain.
 */
@Entity({ name: 'audit_entries' })
@Index('audit_entries_organization_created_idx', ['organizationId', 'createdAt'])
@Index('audit_entries_key_created_idx', ['keyId', 'createdAt'])
@Index('audit_entries_organization_sequence_idx', ['organizationId', 'sequence'])
@Index('audit_entries_organization_actor_created_idx', ['organizationId', 'actorId', 'createdAt'])
export class AuditEntry {
  @PrimaryColumn({ type: 'text' })
  id: string;

  /** Insertion order within the chain; assigned by the database. */
  @Column({ type: 'bigint', generated: 'increment' })
  sequence: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ name: 'key_id', type: 'text', nullable: true })
  keyId: string | null;

  @Column({ type: 'text' })
  action: string;

  @Column({ name: 'actor_type', type: 'text' })
  actorType: ActorType;

  @Column({ name: 'actor_id', type: 'text', nullable: true })
  actorId: string | null;

  @Column({ type: 'text', nullable: true })
  ip: string | null;

  @Column({ name: 'user_agent', type: 'text', nullable: true })
  userAgent: string | null;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  details: Record<string, unknown>;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'previous_hash', type: 'text' })
  previousHash: string;

  @Column({ type: 'text' })
  hash: string;
}
