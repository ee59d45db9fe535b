import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

export type ActorType = 'user' | 'api_key' | 'system';

/**
 * One audited event. Rows are append-only; each carries its link: HMAC-SHA256 under AUDIT_CHAIN_SECRET of
 * its content and of the previous entry's link (audit-chain.ts), so a changed, inserted or removed row
 * breaks the chain, and nobody without the secret can link one in again. Where the chain ends is kept
 * beside it (AuditChainHead).
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

  /** The OAuth client a user acted through; null for any other actor. */
  @Column({ name: 'actor_client_id', type: 'text', nullable: true })
  actorClientId: string | null;

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

  /**
   * False for entries written before the chain had a key: their link is a keyless SHA-256, accepted only
   * at the start of a chain (legacyLink). Every entry written now is keyed.
   */
  @Column({ type: 'boolean' })
  keyed: boolean;
}
