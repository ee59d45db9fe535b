import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * Requests of one key in one UTC hour with one outcome (`allowed` or the refusal's code). Counters
 * are added to, never replaced, so instances flushing the same row in the same hour stay exact.
 */
@Entity({ name: 'key_usage_hourly' })
@Index('key_usage_hourly_organization_hour_idx', ['organizationId', 'hour'])
// Retention deletes by hour across organizations.
@Index('key_usage_hourly_hour_idx', ['hour'])
export class KeyUsageHourly {
  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @PrimaryColumn({ name: 'key_id', type: 'text', primaryKeyConstraintName: 'key_usage_hourly_pkey' })
  keyId: string;

  /** The start of the UTC hour. */
  @PrimaryColumn({
    type: 'timestamptz',
    precision: 3,
    primaryKeyConstraintName: 'key_usage_hourly_pkey',
  })
  hour: Date;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'key_usage_hourly_pkey' })
  outcome: string;

  /** pg answers bigint as a string; the reads sum in SQL and convert there. */
  @Column({ type: 'bigint' })
  count: string;
}
