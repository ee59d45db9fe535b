import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/** A named collection of an organization's files (example extension): the table its migration creates. */
@Entity({ name: 'datasets' })
@Index('datasets_organization_created_idx', ['organizationId', 'createdAt'])
export class Dataset {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  /** The key or user that created it. */
  @Column({ name: 'created_by', type: 'text', nullable: true })
  createdBy: string | null;

  // Millisecond precision: list cursors carry it exactly (src/common/pagination.ts).
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
