import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { Permission } from './permissions';

/** An organization-defined role. Users and keys hold it by `role_name`. */
@Entity({ name: 'custom_roles' })
@Index('custom_roles_organization_name_key', ['organizationId', 'roleName'], { unique: true })
export class CustomRole {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ name: 'role_name', type: 'text' })
  roleName: string;

  /** Flat `resource:action` strings, sorted; the wire form `{resource: [actions]}` is derived. */
  @Column({ type: 'text', array: true })
  permissions: Permission[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
