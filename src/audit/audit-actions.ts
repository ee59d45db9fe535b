import { Injectable } from '@nestjs/common';
import type { OpenAPIObject } from '@nestjs/swagger';
import { CommonError, CommonErrorCode } from '../common/common.errors';
import { DeclaredNames } from '../common/declared-names';

/** The OpenAPI component schemas this registry fills in (see describeAuditActions). */
export const AUDIT_ACTION_SCHEMA = 'AuditAction';
export const AUDIT_ACTION_FILTER_SCHEMA = 'AuditActionFilter';

/**
 * The audit actions of this app: every module that records an action declares it here, from its
 * `onModuleInit`, the core's modules and an extension's alike:
 *
 *     constructor(private readonly auditActions: AuditActions) {}
 *     onModuleInit() { this.auditActions.declare(DATASET_AUDIT_ACTIONS); }
 *
 * It is one instance per app (AuditModule is global), not a process-wide list, so an app without an
 * extension does not know the extension's actions. What reads it: `GET /v1/audit-log?action=` (an action
 * or a group, anything else a 400), the OpenAPI document (the `AuditAction` and `AuditActionFilter`
 * enums, and so the dashboard's filter), and AuditService, which refuses to record an action nobody
 * declared (it could never be filtered for).
 */
@Injectable()
export class AuditActions extends DeclaredNames<true> {
  protected readonly kind = 'audit action';
  private filterSet: ReadonlySet<string> | undefined;

  declare(actions: readonly string[]): void {
    this.declareAll(actions.map((action) => [action, true] as const));
    this.filterSet = undefined;
  }

  /** The declared actions, sorted. */
  actions(): string[] {
    return this.names();
  }

  /** `user.*` and the like: one group per resource that has an action, so a new group is never missed. */
  groups(): string[] {
    return [...new Set(this.actions().map((action) => `${action.split('.')[0]}.*`))].sort();
  }

  /** What `?action=` accepts: an action, or a group (`user.*`: every `user.` action). */
  filters(): string[] {
    return [...this.actions(), ...this.groups()];
  }

  isDeclared(action: string): boolean {
    return this.has(action);
  }

  /**
   * Refuses a filter that is neither a declared action nor a group with 400 validation_failed naming
   * `action`, as the request's other fields are refused: a typo is a 400 rather than an empty page.
   */
  assertFilter(filter: unknown): asserts filter is string | undefined {
    if (filter === undefined) return;
    this.filterSet ??= new Set(this.filters());
    if (typeof filter === 'string' && this.filterSet.has(filter)) return;
    const message = `action must be one of ${this.filters().join(', ')}`;
    throw new CommonError(CommonErrorCode.ValidationFailed, message, {
      errors: [{ field: 'action', message }],
    });
  }
}

/**
 * Writes this app's actions into the OpenAPI document: the `AuditAction` enum (an entry's `action`) and
 * the `AuditActionFilter` enum (`?action=`), which the DTOs name but only the running app can list.
 */
export function describeAuditActions(document: OpenAPIObject, actions: AuditActions): OpenAPIObject {
  const schemas = document.components?.schemas ?? {};
  for (const [name, values] of [
    [AUDIT_ACTION_SCHEMA, actions.actions()],
    [AUDIT_ACTION_FILTER_SCHEMA, actions.filters()],
  ] as const) {
    if (!schemas[name]) throw new Error(`OpenAPI: no schema ${name} to enumerate`);
    schemas[name] = { ...schemas[name], enum: values };
  }
  return document;
}
