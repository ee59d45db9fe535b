import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** Where an A2A client wants a task's status changes POSTed (CreateTaskPushNotificationConfig). */
@Entity({ name: 'a2a_push_configs' })
export class A2aPushConfig {
  @PrimaryColumn({ name: 'task_id', type: 'text' })
  taskId: string;

  /** The client's id for it, or one made for it; unique per task. */
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ type: 'text' })
  url: string;

  /** The client's token for its receiver (X-A2A-Notification-Token), sealed; never answered back. */
  @Column({ name: 'sealed_token', type: 'text', nullable: true })
  sealedToken: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
