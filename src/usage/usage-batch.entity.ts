import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * A batch of usage counters already added to key_usage_hourly, by the id its instance gave it: a
 * retried batch whose first try did commit is found here and not added again. Kept a day (retention).
 */
@Entity({ name: 'usage_batches' })
@Index('usage_batches_added_at_idx', ['addedAt'])
export class UsageBatch {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'usage_batches_pkey' })
  id: string;

  @Column({ name: 'added_at', type: 'timestamptz', precision: 3 })
  addedAt: Date;
}
