import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One user's consent to one client (`grant_…`), beside oidc-provider's own Grant record: who, in which
 * organization, for which client, resource and permissions. Deleted when the grant ends (revoked, or a
 * refresh token or code replayed), so a listed grant is a live one.
 */
@Entity({ name: 'oauth_grants' })
@Index('oauth_grants_organization_idx', ['organizationId', 'createdAt'])
export class OAuthGrant {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'oauth_grants_pkey' })
  id: string;

  /** SHA-256 of oidc-provider's grant id (tokens name that one). */
  @Index('oauth_grants_provider_grant_key', { unique: true })
  @Column({ name: 'provider_grant_hash', type: 'text' })
  providerGrantHash: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ name: 'user_id', type: 'text' })
  userId: string;

  @Column({ name: 'client_id', type: 'text' })
  clientId: string;

  @Column({ name: 'client_name', type: 'text', nullable: true })
  clientName: string | null;

  @Column({ type: 'text', array: true })
  scopes: string[];

  @Column({ type: 'text' })
  resource: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', precision: 3, nullable: true })
  lastUsedAt: Date | null;
}
