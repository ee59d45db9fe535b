import { defineIdKind } from '../common/ids';
import { definePermissions } from '../roles/permissions';

/**
 * What the accounts module adds to the shared registries. Users and teams are an administrator's
 * business: no other built-in role holds anything on them, not even read.
 */
definePermissions('users');
definePermissions('teams');
export const USER_ID = defineIdKind('usr');
export const TEAM_ID = defineIdKind('team');
export const ORGANIZATION_ID = defineIdKind('org');

/** The audit actions AccountsModule records, of users and teams (declared on AuditActions when it starts). */
export const ACCOUNT_AUDIT_ACTIONS = [
  'user.created',
  'user.updated',
  'user.deactivated',
  'user.activated',
  'team.created',
  'team.member_added',
  'team.member_removed',
] as const;
export type AccountAuditAction = (typeof ACCOUNT_AUDIT_ACTIONS)[number];
