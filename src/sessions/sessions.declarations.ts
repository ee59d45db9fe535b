import { defineIdKind } from '../common/ids';

/** The ids the sessions module issues (a dashboard session is the signed-in user's, not a resource). */
export const DASHBOARD_SESSION_ID = defineIdKind('ses');
