import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum RoleErrorCode {
  NotFound = 'not_found',
  UnknownRole = 'unknown_role',
  RoleNameTaken = 'role_name_taken',
  RoleInUse = 'role_in_use',
  BuiltInRole = 'built_in_role',
  /** Granting or acting on permissions the caller lacks. */
  PrivilegeEscalation = 'privilege_escalation',
}

export class RoleError extends defineDomainErrors('roles', {
  [RoleErrorCode.NotFound]: ErrorKind.NotFound,
  [RoleErrorCode.UnknownRole]: ErrorKind.InvalidInput,
  [RoleErrorCode.RoleNameTaken]: ErrorKind.Conflict,
  [RoleErrorCode.RoleInUse]: ErrorKind.Conflict,
  [RoleErrorCode.BuiltInRole]: ErrorKind.Conflict,
  [RoleErrorCode.PrivilegeEscalation]: ErrorKind.Forbidden,
}) {}
