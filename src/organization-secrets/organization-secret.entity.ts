import {
  Column,
  CreateDateColumn,
  Entity,
  ForeignKey,
  Index,
  PrimaryColumn,
  UpdateDateColumn,
} from 'typeorm';
import { Organization } from '../accounts/organization.entity';

/**
 * A value an organization's agents send upstream (a model provider's API key, say), write-only: the
 * API shows its name and last four characters, never the value, which is stored sealed.
 */
@Entity({ name: 'organization_secrets' })
@Index('organization_secrets_organization_created_idx', ['organizationId', 'createdAt'])
@Index('organization_secrets_organization_name_key', ['organizationId', 'name'], { unique: true })
export class OrganizationSecret {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  @ForeignKey(() => Organization, { name: 'organization_secrets_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId: string;

  @Column({ type: 'text' })
  name: string;

  /** The value sealed with the 'organization-secrets' box (AES-256-GCM): `iv.tag.ciphertext`. */
  @Column({ name: 'sealed_value', type: 'text' })
  sealedValue: string;

  /** The value's last four characters, kept only when it has at least 16 (null otherwise). */
  @Column({ type: 'text', nullable: true })
  last4: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;

  /** When a run last opened the value (at most once a minute is written); null until then. */
  @Column({ name: 'last_used_at', type: 'timestamptz', precision: 3, nullable: true })
  lastUsedAt: Date | null;
}
