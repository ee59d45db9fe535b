import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity({ name: 'webhooks' })
@Index('webhooks_organization_created_idx', ['organizationId', 'createdAt'])
export class Webhook {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ type: 'text' })
  url: string;

  @Column({ type: 'text', array: true })
  events: string[];

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** The signing secret (`whsec_…`), sealed with AES-256-GCM; shown in clear only when issued. */
  @Column({ name: 'sealed_secret', type: 'text' })
  sealedSecret: string;

  @Column({ name: 'consecutive_failures', type: 'integer', default: 0 })
  consecutiveFailures: number;

  @Column({ name: 'disabled_at', type: 'timestamptz', precision: 3, nullable: true })
  disabledAt: Date | null;

  @Column({ name: 'disabled_reason', type: 'text', nullable: true })
  disabledReason: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
