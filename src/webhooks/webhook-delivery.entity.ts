import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One event to one endpoint; retried until it succeeds or the retry schedule runs out. */
@Entity({ name: 'webhook_deliveries' })
@Index('webhook_deliveries_webhook_created_idx', ['webhookId', 'createdAt'])
@Index('webhook_deliveries_due_idx', ['nextAttemptAt'], { where: "status = 'pending'" })
@Index('webhook_deliveries_event_webhook_key', ['eventId', 'webhookId'], { unique: true })
export class WebhookDelivery {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ name: 'webhook_id', type: 'text' })
  webhookId: string;

  /** Also the `webhook-id` header: the same for every attempt, so receivers can deduplicate. */
  @Column({ name: 'event_id', type: 'text' })
  eventId: string;

  @Column({ name: 'event_type', type: 'text' })
  eventType: string;

  @Column({ type: 'text', default: 'pending' })
  status: DeliveryStatus;

  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', precision: 3, nullable: true })
  nextAttemptAt: Date | null;

  @Column({ name: 'last_response_status', type: 'integer', nullable: true })
  lastResponseStatus: number | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @Column({ name: 'delivered_at', type: 'timestamptz', precision: 3, nullable: true })
  deliveredAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
