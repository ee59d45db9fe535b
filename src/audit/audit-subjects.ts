import { Injectable } from '@nestjs/common';

/** Who or what an audit entry's id stands for, as a person reading the log knows it. */
export interface AuditSubject {
  /** A user's name, or an API key's name. */
  name: string;
  /** A user's email; absent for keys. */
  email?: string;
  /** A key that was deleted since (its entries stay, its page does not). */
  deleted: boolean;
}

/** The subjects among `ids` that belong to the organization, by id; one query for all of them. */
export type AuditSubjectLookup = (
  organizationId: string,
  ids: string[],
) => Promise<Map<string, AuditSubject>>;

export type AuditSubjectKind = 'user' | 'api_key';

/**
 * Users and keys are known by the modules that own them (accounts, api-keys), which sit above the audit
 * log: each registers a lookup here, so the audit log reads no table of theirs and still names the
 * actors and keys of a page (as RoleHolders does for roles).
 */
@Injectable()
export class AuditSubjects {
  private readonly lookups = new Map<AuditSubjectKind, AuditSubjectLookup>();

  register(kind: AuditSubjectKind, lookup: AuditSubjectLookup): void {
    this.lookups.set(kind, lookup);
  }

  async lookUp(
    organizationId: string,
    kind: AuditSubjectKind,
    ids: string[],
  ): Promise<Map<string, AuditSubject>> {
    const lookup = this.lookups.get(kind);
    const distinct = [...new Set(ids)];
    if (!lookup || !distinct.length) return new Map();
    return lookup(organizationId, distinct);
  }
}
