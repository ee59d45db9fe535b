import { Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { Task } from '../tasks/task.entity';

@Entity({ name: 'files' })
@Index('files_organization_created_idx', ['organizationId', 'createdAt'])
@Index('files_task_idx', ['taskId'], { where: 'task_id IS NOT NULL' })
export class FileRecord {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  /** Sanitised: no path, no control characters, at most 255 characters. */
  @Column({ type: 'text' })
  filename: string;

  @Column({ name: 'content_type', type: 'text' })
  contentType: string;

  @Column({ type: 'bigint', transformer: { to: (v: number) => v, from: (v: string) => Number(v) } })
  size: number;

  @Column({ type: 'text' })
  sha256: string;

  @Column({ type: 'text', nullable: true })
  purpose: string | null;

  @Column({ name: 'storage_key', type: 'text' })
  storageKey: string;

  @Column({ name: 'created_by', type: 'text', nullable: true })
  createdBy: string | null;

  /** Set for an output file: uploaded with the task token of this task's run. */
  @Column({ name: 'task_id', type: 'text', nullable: true })
  // A deleted task's output files stay, as files of no task (AgentRuns migration).
  @ForeignKey(() => Task, { name: 'files_task_id_fkey', onDelete: 'SET NULL' })
  taskId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
