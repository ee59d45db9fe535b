/** An audit log entry as the contract shapes it (GET /v1/audit-log, GET /v1/api-keys/{id}/audit-log). */
export interface AuditEntry {
  id: string;
  action: string;
  key_id: string | null;
  actor: { type: string; id: string | null };
  ip: string | null;
  user_agent: string | null;
  created_at: string;
  details: Record<string, any>;
}
