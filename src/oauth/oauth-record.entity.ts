import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * What oidc-provider stores (oauth-adapter.ts): codes, tokens, sessions, interactions, clients, grants.
 * Every id is kept as its SHA-256 (`id_hash`), and the payload is kept without the id (`jti`), so no row
 * holds a value anyone could present: an opaque access or refresh token, a code, a session cookie.
 */
@Entity({ name: 'oauth_records' })
@Index('oauth_records_grant_idx', ['grantIdHash'])
@Index('oauth_records_uid_idx', ['uidHash'])
@Index('oauth_records_user_code_idx', ['userCodeHash'])
@Index('oauth_records_expires_idx', ['expiresAt'])
export class OAuthRecord {
  /** `<model>:<sha256 hex of the id>`: one key space for every model. */
  @PrimaryColumn({ name: 'id_hash', type: 'text', primaryKeyConstraintName: 'oauth_records_pkey' })
  idHash: string;

  /** oidc-provider's model name (AccessToken, RefreshToken, AuthorizationCode, Session, Grant…). */
  @Column({ type: 'text' })
  model: string;

  @Column({ type: 'jsonb' })
  payload: Record<string, unknown>;

  /** SHA-256 of the grant the row belongs to, for revokeByGrantId. */
  @Column({ name: 'grant_id_hash', type: 'text', nullable: true })
  grantIdHash: string | null;

  /** SHA-256 of a session's uid, for findByUid. */
  @Column({ name: 'uid_hash', type: 'text', nullable: true })
  uidHash: string | null;

  @Column({ name: 'user_code_hash', type: 'text', nullable: true })
  userCodeHash: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3, nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'consumed_at', type: 'timestamptz', precision: 3, nullable: true })
  consumedAt: Date | null;
}
