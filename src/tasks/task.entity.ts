import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { bigintAsNumber } from '../common/credit-balance.columns';
import type { CreditAccount } from '../api-keys/credits/credit-ledger';

/** An output file as a task lists it (and its `file` event carries it). */
export interface TaskOutputFile {
  id: string;
  filename: string;
  size: number;
  sha256: string;
}

export const TASK_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
/** The statuses a task leaves again; the others are its end. */
export const ACTIVE_TASK_STATUSES: readonly string[] = ['queued', 'running'];

/** A task is also its own queue entry: workers claim rows with FOR UPDATE SKIP LOCKED. */
@Entity({ name: 'tasks' })
@Index('tasks_organization_created_idx', ['organizationId', 'createdAt'])
@Index('tasks_claimable_idx', ['runAfter'], { where: "status = 'queued'" })
@Index('tasks_lease_idx', ['leaseExpiresAt'], { where: "status = 'running'" })
// The settlements Redis still owes a refund (TaskCreditSettlements).
@Index('tasks_refund_pending_idx', ['completedAt'], { where: "credits_refund_state = 'pending'" })
@Index('tasks_organization_context_idx', ['organizationId', 'contextId', 'createdAt'], {
  where: 'context_id IS NOT NULL',
})
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

  /** The A2A conversation (`contextId`) of a task made over A2A; null for the others. */
  @Column({ name: 'context_id', type: 'text', nullable: true })
  contextId: string | null;

  /**
   * The W3C traceparent of the request that made the task, with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT):
   * its run continues that trace in whichever process runs it. Null otherwise.
   */
  @Column({ name: 'trace_parent', type: 'text', nullable: true })
  traceParent: string | null;

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

  /** The last progress event's data (null until one). */
  @Column({ type: 'jsonb', nullable: true })
  progress: Record<string, unknown> | null;

  /**
   * The task's last event number (TaskEvents migration). Only the triggers and the event SQL of
   * task-queue.repository.ts write it, under the row's lock: never inserted, saved or read through the
   * entity, so a save of a row read earlier cannot put an old number back.
   */
  @Column({ name: 'event_seq', type: 'integer', default: 0, insert: false, update: false, select: false })
  eventSeq?: number;

  /** Kept by triggers on files (AgentRuns migration): the files uploaded with this task's tokens. */
  @Column({ name: 'output_files', type: 'jsonb', default: () => "'[]'" })
  outputFiles: TaskOutputFile[];

  /** What the agent reported (usage events add up). */
  @Column({ name: 'input_tokens', type: 'bigint', default: 0, transformer: bigintAsNumber })
  inputTokens: number;

  @Column({ name: 'output_tokens', type: 'bigint', default: 0, transformer: bigintAsNumber })
  outputTokens: number;

  /** Credits reserved when the task was created; the run never costs more. */
  @Column({ name: 'max_credits', type: 'integer', default: 0 })
  maxCredits: number;

  /** The agent's pricing when the task was created (a later change of the agent does not reprice it). */
  @Column({ name: 'credits_per_1k_input_tokens', type: 'double precision', default: 0 })
  creditsPer1kInputTokens: number;

  @Column({ name: 'credits_per_1k_output_tokens', type: 'double precision', default: 0 })
  creditsPer1kOutputTokens: number;

  /**
   * Where `maxCredits` were reserved (the creating key's balance, its identity's, or both: each holds
   * the whole reservation), when they were; null when neither has credits (unlimited), the task was
   * made with an access token, or it reserved nothing. Rows written before identities hold one account
   * as an object: the settlement's SQL reads both shapes (RESERVED_ACCOUNTS in task-queue.repository.ts).
   */
  @Column({ name: 'credit_reservation', type: 'jsonb', nullable: true })
  creditReservation: CreditAccount[] | null;

  /** What the settlement gave back (max_credits - credits_charged); null until settled. */
  @Column({ name: 'credits_refund', type: 'integer', nullable: true })
  creditsRefund: number | null;

  /** `pending` while Redis still owes the refund (TaskCreditSettlements), `done` after; null until settled. */
  @Column({ name: 'credits_refund_state', type: 'text', nullable: true })
  creditsRefundState: 'pending' | 'done' | null;

  /** What the run cost, once settled (null while it runs). */
  @Column({ name: 'credits_charged', type: 'integer', nullable: true })
  creditsCharged: number | null;

  @Column({ name: 'started_at', type: 'timestamptz', precision: 3, nullable: true })
  startedAt: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', precision: 3, nullable: true })
  completedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
