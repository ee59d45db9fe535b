import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The outbox: every event (key.created, key.rotated, …) is written in the same transaction as the
 * change that causes it, so delivery (webhooks) can never miss or invent one.
 */
@Entity({ name: 'events' })
@Index('events_organization_created_idx', ['organizationId', 'createdAt'])
@Index('events_undispatched_idx', ['createdAt'], { where: 'dispatched_at IS NULL' })
export class DomainEvent {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ type: 'text' })
  type: string;

  /** Ids and public fields only: never a key value or a hash. */
  @Column({ type: 'jsonb' })
  data: Record<string, unknown>;

  /**
   * A secret the event must carry to its receivers (the new value of a policy rotation), encrypted
   * with AES-256-GCM under a key derived from API_KEY_HASH_SECRET; never stored in clear.
   */
  @Column({ name: 'sealed_secret', type: 'text', nullable: true })
  sealedSecret: string | null;

  /** Set once the event has been fanned out to the organization's webhook endpoints. */
  @Column({ name: 'dispatched_at', type: 'timestamptz', precision: 3, nullable: true })
  dispatchedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
