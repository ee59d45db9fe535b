import { defineIdKind } from '../common/ids';

/** `grant_…`: one user's consent to one client, as GET /v1/oauth/grants will list it. */
export const OAUTH_GRANT_ID = defineIdKind('grant');

/** The audit actions OAuthModule records (declared on AuditActions when it starts); webhook events alike. */
export const OAUTH_AUDIT_ACTIONS = [
  'oauth.grant_created',
  'oauth.grant_revoked',
  'oauth.client_registered',
] as const;
export type OAuthAuditAction = (typeof OAUTH_AUDIT_ACTIONS)[number];
