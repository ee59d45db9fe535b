import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';

export const TASK_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
/** The statuses a task leaves again; the others are its end. */
export const ACTIVE_TASK_STATUSES: readonly string[] = ['queued', 'running'];

/** A task is also its own queue entry: workers claim rows with FOR UPDATE SKIP LOCKED. */
@Entity({ name: 'tasks' })
@Index('tasks_organization_created_idx', ['organizationId', 'createdAt'])
@Index('tasks_claimable_idx', ['runAfter'], { where: "status = 'queued'" })
@Index('tasks_lease_idx', ['leaseExpiresAt'], { where: "status = 'running'" })
@Index('tasks_idempotency_key', ['organizationId', 'idempotencyKey'], {
  unique: true,
  where: 'idempotency_key IS NOT NULL',
})
export class Task {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ type: 'text' })
  instruction: string;

  @Column({ name: 'agent_type', type: 'text' })
  agentType: string;

  @Column({ name: 'agent_id', type: 'text', nullable: true })
  agentId: string | null;

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  attachments: string[];

  @Column({ type: 'text', default: 'queued' })
  status: TaskStatus;

  @Column({ type: 'jsonb', nullable: true })
  result: unknown;

  @Column({ type: 'jsonb', nullable: true })
  error: { code: string; message: string } | null;

  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ name: 'max_attempts', type: 'integer' })
  maxAttempts: number;

  @Column({ name: 'run_after', type: 'timestamptz', precision: 3, default: () => 'now()' })
  runAfter: Date;

  @Column({ name: 'lease_owner', type: 'text', nullable: true })
  leaseOwner: string | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', precision: 3, nullable: true })
  leaseExpiresAt: Date | null;

  @Column({ name: 'idempotency_key', type: 'text', nullable: true })
  idempotencyKey: string | null;

  /** The caller's key, sealed, for agents that call back; absent when the key hides credentials. Cleared when the task ends. */
  @Column({ name: 'sealed_credential', type: 'text', nullable: true })
  sealedCredential: string | null;

  @Column({ name: 'created_by', type: 'text', nullable: true })
  createdBy: string | null;

  @Column({ name: 'started_at', type: 'timestamptz', precision: 3, nullable: true })
  startedAt: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', precision: 3, nullable: true })
  completedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
