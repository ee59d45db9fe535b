import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** The unique index on (organization, name): the service turns its violation into 409 project_name_taken. */
export const PROJECT_NAME_KEY = 'projects_organization_name_key';

/**
 * A project of an organization (example extension): the table its migration creates. A name is taken
 * once per organization; the unique index both enforces it (a racing duplicate is a unique violation,
 * answered 409) and serves lookups within an organization.
 */
@Entity({ name: 'projects' })
@Index(PROJECT_NAME_KEY, ['organizationId', 'name'], { unique: true })
@Index('projects_organization_created_idx', ['organizationId', 'createdAt'])
export class Project {
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

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
