import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum OrganizationSecretErrorCode {
  NotFound = 'not_found',
  /** Another secret of the organization has this name. */
  SecretNameTaken = 'secret_name_taken',
  /** Deleting a secret that something (an agent's config) still names. */
  SecretInUse = 'secret_in_use',
}

export class OrganizationSecretError extends defineDomainErrors('organization-secrets', {
  [OrganizationSecretErrorCode.NotFound]: ErrorKind.NotFound,
  [OrganizationSecretErrorCode.SecretNameTaken]: ErrorKind.Conflict,
  [OrganizationSecretErrorCode.SecretInUse]: ErrorKind.Conflict,
}) {}
