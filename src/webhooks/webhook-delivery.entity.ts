import { Check, Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/**
 * One event to one endpoint, retried until it succeeds or the retry schedule runs out: an outbox event
 * to a webhook, or a task's status event to an A2A push config (src/a2a/push; the migration
 * A2aPushConfigs writes those), never both.
 */
@Entity({ name: 'webhook_deliveries' })
@Index('webhook_deliveries_webhook_created_idx', ['webhookId', 'createdAt'])
@Index('webhook_deliveries_due_idx', ['nextAttemptAt'], { where: "status = 'pending'" })
@Index('webhook_deliveries_event_webhook_key', ['eventId', 'webhookId'], { unique: true })
// An A2A push delivery: once per (task, config, status event).
@Index('webhook_deliveries_a2a_push_key', ['a2aTaskId', 'a2aPushConfigId', 'a2aEventSeq'], {
  unique: true,
  where: 'a2a_push_config_id IS NOT NULL',
})
@Check(
  'webhook_deliveries_target_check',
  `(("webhook_id" IS NOT NULL AND "event_id" IS NOT NULL AND "a2a_push_config_id" IS NULL) OR ("webhook_id" IS NULL AND "a2a_task_id" IS NOT NULL AND "a2a_push_config_id" IS NOT NULL AND "a2a_event_seq" IS NOT NULL))`,
)
export class WebhookDelivery {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  /** Null for an A2A push delivery. */
  @Column({ name: 'webhook_id', type: 'text', nullable: true })
  webhookId: string | null;

  /** Also the `webhook-id` header: the same for every attempt, so receivers can deduplicate. */
  @Column({ name: 'event_id', type: 'text', nullable: true })
  eventId: string | null;

  /** An A2A push delivery's task, config and status event (the task event's number). */
  @Column({ name: 'a2a_task_id', type: 'text', nullable: true })
  a2aTaskId: string | null;

  @Column({ name: 'a2a_push_config_id', type: 'text', nullable: true })
  a2aPushConfigId: string | null;

  @Column({ name: 'a2a_event_seq', type: 'integer', nullable: true })
  a2aEventSeq: number | null;

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
