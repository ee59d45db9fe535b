import type { AuditSubject } from './audit-subjects';

/** What `expand` may ask a page of entries to name: its actors, its keys. */
export const AUDIT_EXPANSIONS = ['actor', 'key'] as const;
export type AuditExpansion = (typeof AUDIT_EXPANSIONS)[number];

/** The names behind a page's ids, by kind; only what `expand` asked for. */
export interface AuditNames {
  actors?: { users: Map<string, AuditSubject>; keys: Map<string, AuditSubject> };
  keys?: Map<string, AuditSubject>;
}
