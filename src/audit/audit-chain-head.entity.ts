import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Where an organization's audit chain ends: its last entry and that entry's link, signed with
 * AUDIT_CHAIN_SECRET. Written in the transaction that appends, so deleting the last entries (which the
 * links before them cannot show) leaves a head naming an entry that is gone. Kept apart from the
 * entries: a row among them would be deleted with them.
 */
@Entity({ name: 'audit_chain_heads' })
export class AuditChainHead {
  @PrimaryColumn({
    name: 'organization_id',
    type: 'text',
    primaryKeyConstraintName: 'audit_chain_heads_pkey',
  })
  organizationId: string;

  /** audit_entries.sequence of the last entry. */
  @Column({ type: 'bigint' })
  sequence: string;

  @Column({ name: 'entry_id', type: 'text' })
  entryId: string;

  /** The last entry's link. */
  @Column({ type: 'text' })
  hash: string;

  /** HMAC of the four above (AuditChainKey.headMac); empty once the head was found tampered with. */
  @Column({ type: 'text' })
  mac: string;
}
