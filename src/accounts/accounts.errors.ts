import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum AccountErrorCode {
  NotFound = 'not_found',
  EmailTaken = 'email_taken',
  TeamNameTaken = 'team_name_taken',
  CannotDeactivateSelf = 'cannot_deactivate_self',
  LastAdministrator = 'last_administrator',
}

export class AccountError extends defineDomainErrors('accounts', {
  [AccountErrorCode.NotFound]: ErrorKind.NotFound,
  [AccountErrorCode.EmailTaken]: ErrorKind.Conflict,
  [AccountErrorCode.TeamNameTaken]: ErrorKind.Conflict,
  [AccountErrorCode.CannotDeactivateSelf]: ErrorKind.Conflict,
  [AccountErrorCode.LastAdministrator]: ErrorKind.Conflict,
}) {}
