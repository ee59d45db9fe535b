import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  UpdateDateColumn,
} from 'typeorm';
import { Organization } from './organization.entity';

@Entity({ name: 'users' })
@Index('users_organization_created_idx', ['organizationId', 'createdAt'])
export class User {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @ManyToOne(() => Organization, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'organization_id' })
  organization?: Organization;

  /** Stored lower-cased; unique across the service because login is by email alone. */
  @Index('users_email_key', { unique: true })
  @Column({ type: 'text' })
  email: string;

  @Column({ type: 'text' })
  name: string;

  /** A built-in role name or the `role_name` of one of the organization's custom roles. */
  @Column({ type: 'text' })
  role: string;

  @Column({ name: 'password_hash', type: 'text' })
  passwordHash: string;

  @Column({ type: 'boolean', default: true })
  active: boolean;

  @Column({ name: 'deactivated_at', type: 'timestamptz', precision: 3, nullable: true })
  deactivatedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
