import { defineIdKind } from '../common/ids';

/** `grant_…`: one user's consent to one client, as GET /v1/oauth/grants will list it. */
export const OAUTH_GRANT_ID = defineIdKind('grant');
