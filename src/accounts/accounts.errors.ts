import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum AccountErrorCode {
  NotFound = 'not_found',
  EmailTaken = 'email_taken',
  TeamNameTaken = 'team_name_taken',
  CannotDeactivateSelf = 'cannot_deactivate_self',
}

export class AccountError extends defineDomainErrors('accounts', {
  [AccountErrorCode.NotFound]: ErrorKind.NotFound,
  [AccountErrorCode.EmailTaken]: ErrorKind.Conflict,
  [AccountErrorCode.TeamNameTaken]: ErrorKind.Conflict,
  [AccountErrorCode.CannotDeactivateSelf]: ErrorKind.Conflict,
}) {}
