import { Check, Column, CreateDateColumn, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { ApiKey } from './api-key.entity';

export const LEAK_SOURCES = ['github', 'public_report'] as const;
export type LeakSource = (typeof LEAK_SOURCES)[number];

export const LEAK_ACTIONS = ['revoked', 'disabled', 'none'] as const;
export type LeakAction = (typeof LEAK_ACTIONS)[number];

/**
 * One report of a key at one source URL: a key is reported once per URL (GitHub resends a report it
 * has no answer for, and one commit can be found again), so `key.leaked` is recorded once per row.
 */
@Entity({ name: 'api_key_leaks' })
// The constraints LeakedKeysPolicies made, as it wrote them: a new source or action needs a migration too.
@Check('api_key_leaks_source_check', `"source" IN ('github', 'public_report')`)
@Check('api_key_leaks_action_check', `"action_taken" IN ('revoked', 'disabled', 'none')`)
export class ApiKeyLeak {
  @PrimaryColumn({ name: 'key_id', type: 'text' })
  @ForeignKey(() => ApiKey, { name: 'api_key_leaks_key_id_fkey', onDelete: 'CASCADE' })
  keyId: string;

  /** Where the key was found; '' when the report named no URL (public reports). */
  @PrimaryColumn({ name: 'source_url', type: 'text' })
  sourceUrl: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ type: 'text' })
  source: LeakSource;

  /** What this report did to the key (the organization's leak_response, or none if it was not active). */
  @Column({ name: 'action_taken', type: 'text' })
  actionTaken: LeakAction;

  @CreateDateColumn({ name: 'reported_at', type: 'timestamptz', precision: 3 })
  reportedAt: Date;
}
