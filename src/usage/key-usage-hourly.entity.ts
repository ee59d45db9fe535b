import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** `identity_id` of usage counted while its key belonged to no identity. */
export const NO_IDENTITY = '';

/**
 * Requests of one key in one UTC hour with one outcome (`allowed` or the refusal's code), under the
 * identity the key belonged to when they were counted. Counters are added to, never replaced, so
 * instances flushing the same row in the same hour stay exact.
 */
@Entity({ name: 'key_usage_hourly' })
@Index('key_usage_hourly_organization_hour_idx', ['organizationId', 'hour'])
// Retention deletes by hour across organizations.
@Index('key_usage_hourly_hour_idx', ['hour'])
// An identity's buckets (GET /v1/identities/{id}/usage); rows of keys without one are most rows, and
// never read this way.
@Index('key_usage_hourly_identity_hour_idx', ['identityId', 'hour'], { where: "identity_id <> ''" })
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

  /**
   * The identity the key belonged to when the counts were made (NO_IDENTITY: none), so a key moved to
   * another identity, or detached, leaves its history with the identity it was made under. Part of the
   * primary key (hence not null): a key moved within an hour has a row under each identity. Last in it,
   * so a key's reads by hour still use the key's prefix of the index.
   */
  @PrimaryColumn({
    name: 'identity_id',
    type: 'text',
    default: NO_IDENTITY,
    primaryKeyConstraintName: 'key_usage_hourly_pkey',
  })
  identityId: string;

  /** pg answers bigint as a string; the reads sum in SQL and convert there. */
  @Column({ type: 'bigint' })
  count: string;
}
