import { defineIdKind } from '../common/ids';

/** The ids the sessions module issues (a dashboard session is the signed-in user's, not a resource). */
export const DASHBOARD_SESSION_ID = defineIdKind('ses');

/** The audit actions SessionsModule records (declared on AuditActions when it starts). */
export const SESSION_AUDIT_ACTIONS = ['session.signed_in', 'session.signed_out'] as const;
export type SessionAuditAction = (typeof SESSION_AUDIT_ACTIONS)[number];
