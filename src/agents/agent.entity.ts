import { Column, CreateDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { AgentPricing } from './agent-pricing';

@Entity({ name: 'agents' })
@Index('agents_organization_created_idx', ['organizationId', 'createdAt'])
export class Agent {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ type: 'text' })
  name: string;

  /** A registered runner type (`echo`, `http`, or one a platform module adds). */
  @Column({ type: 'text' })
  type: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  /** Runner-specific settings, e.g. `{url, timeout_ms}` for `http`. */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  config: Record<string, unknown>;

  /** What a run costs per 1,000 tokens it reports; null: free. */
  @Column({ type: 'jsonb', nullable: true })
  pricing: AgentPricing | null;

  /** What a task of this agent reserves when it names no `max_credits`; null: 0. */
  @Column({ name: 'default_max_credits', type: 'integer', nullable: true })
  defaultMaxCredits: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
